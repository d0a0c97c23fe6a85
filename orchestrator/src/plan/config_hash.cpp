// XXH3-128 of the canonical configuration (see config_hash.h).
#include "plan/config_hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace orch {

nlohmann::json hash_input(const nlohmann::json& config) {
  nlohmann::json in = config;
  in.erase("repeat");
  in.erase("timeout");
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
