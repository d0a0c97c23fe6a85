// XXH3-128 of the canonical configuration (see config_hash.h).
#include "plan/config_hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "plan/experiment_schema.h"

namespace orch {

namespace {

/// `telemetry` with every field at its default.
const nlohmann::json& default_telemetry() {
  static const nlohmann::json kDefault = [] {
    nlohmann::json d = nlohmann::json::object();
    for (const FieldSpec& f : find_experiment_key("telemetry")->fields) d[f.name] = f.default_value;
    return d;
  }();
  return kDefault;
}

}  // namespace

nlohmann::json hash_input(const nlohmann::json& config) {
  nlohmann::json in = config;
  in.erase("repeat");
  in.erase("timeout");
  // Telemetry is a measurement setting, not a training one, but the sampler could in
  // principle slow a run down, and a user comparing sampler on/off (or two intervals) needs
  // two configurations, so a non-default `telemetry` is hashed. At its default it is left out,
  // so every configuration hashed before the key existed keeps its hash.
  if (auto it = in.find("telemetry"); it != in.end() && *it == default_telemetry()) in.erase(it);
  return in;
}

std::string config_hash(const nlohmann::json& config) {
  const std::string text = hash_input(config).dump();
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
