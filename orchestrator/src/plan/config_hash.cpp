// XXH3-128 of the canonical configuration (see config_hash.h).
#include "plan/config_hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "plan/experiment_schema.h"
#include "result/json_dump.h"

namespace orch {

namespace {

/// Leaves `key` out of the hash input while it has its default value.
void erase_if_default(nlohmann::json& in, const char* key, const nlohmann::json& default_value) {
  if (auto it = in.find(key); it != in.end() && *it == default_value) in.erase(it);
}

// Appends every key and string of `j` that is not UTF-8, as its length and its bytes, in the
// tree's (sorted) order.
void append_non_utf8(const nlohmann::json& j, std::string& out) {
  const auto append = [&out](const std::string& s) {
    if (is_utf8(s)) return;
    out += std::to_string(s.size());
    out += ':';
    out += s;
  };
  if (j.is_string()) append(j.get_ref<const std::string&>());
  if (j.is_array()) {
    for (const auto& v : j) append_non_utf8(v, out);
  }
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      append(k);
      append_non_utf8(v, out);
    }
  }
}

// The text that is hashed. For a configuration whose text is all UTF-8 it is the plain dump, as
// it has always been, so no hash recorded in a database changes. A configuration holding text
// that is not UTF-8 (a Latin-1 name) has no plain dump: dump() throws. Its JSON with U+FFFD in
// place of the bad bytes is not enough, since two Latin-1 names would hash the same; so the
// original bytes of each such string follow it, after a NUL byte. A plain dump never holds a
// raw NUL (JSON escapes it), so this text cannot equal any UTF-8 configuration's, and it is
// deterministic: the same bytes give the same hash on every machine.
std::string hash_text(const nlohmann::json& in) {
  try {
    return in.dump();
  } catch (const nlohmann::json::type_error& e) {
    if (e.id != 316) throw;  // 316: invalid UTF-8
  }
  std::string text = json_dump(in);
  text += '\0';
  append_non_utf8(in, text);
  return text;
}

}  // namespace

nlohmann::json hash_input(const nlohmann::json& config,
                          const std::vector<nlohmann::json::json_pointer>& unhashed) {
  nlohmann::json in = config;
  // A plugin parameter added later, at its default: the configuration hashes as it did before
  // the parameter existed (ParamSpec::hash_exempt_since).
  for (const auto& ptr : unhashed) {
    if (!in.contains(ptr)) continue;
    in.at(ptr.parent_pointer()).erase(ptr.back());
  }
  in.erase("repeat");
  in.erase("timeout");
  // Where the script was found is not what ran: its content (script_xxh128) and the command
  // are, so a checkout moved elsewhere keeps its hashes.
  if (auto w = in.find("workload"); w != in.end() && w->is_object()) w->erase("script_path");
  // Telemetry is a measurement setting, not a training one, but the sampler could in
  // principle slow a run down, and a user comparing sampler on/off (or two intervals) needs
  // two configurations, so a non-default `telemetry` is hashed. At its default it is left out,
  // so every configuration hashed before the key existed keeps its hash.
  static const nlohmann::json kDefaultTelemetry =
      find_experiment_key("telemetry")->field_defaults();
  erase_if_default(in, "telemetry", kDefaultTelemetry);
  // Profiling runs extra steps after the measured ones, so it does not change what is
  // measured; it is hashed when on all the same, so that a profiled configuration is a
  // configuration of its own (its row in the store holds a trace; `profile.steps: [0, 10]`
  // gives two), and left out when off, so every hash from before the key existed still holds.
  static const nlohmann::json kDefaultProfile = find_experiment_key("profile")->field_defaults();
  erase_if_default(in, "profile", kDefaultProfile);
  // Added after results were recorded: at its default (the driver's setting) it is left out.
  erase_if_default(in, "cuda_connections", "driver");
  // Likewise `isolation` at its default, worker (experiment_schema.cpp says why).
  erase_if_default(in, "isolation", "worker");
  return in;
}

std::string config_hash(const nlohmann::json& config,
                        const std::vector<nlohmann::json::json_pointer>& unhashed) {
  const std::string text = hash_text(hash_input(config, unhashed));
  XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);  // big-endian bytes: high 64 bits first
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : c.digest) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

}  // namespace orch
