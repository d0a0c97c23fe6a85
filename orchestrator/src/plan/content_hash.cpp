// XXH3-128 of bytes and files (see content_hash.h).
#include "plan/content_hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fstream>
#include <memory>
#include <vector>

namespace orch {

namespace {

std::string hex(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof c.digest);
  for (unsigned char b : c.digest) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

}  // namespace

std::string content_hash_hex(std::string_view bytes) {
  return hex(XXH3_128bits(bytes.data(), bytes.size()));
}

std::optional<std::string> file_content_hash_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  // Streamed: the same digest as the whole file at once, without holding it in memory.
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                       &XXH3_freeState);
  if (!state || XXH3_128bits_reset(state.get()) != XXH_OK) return std::nullopt;
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    if (in.gcount() > 0) XXH3_128bits_update(state.get(), chunk.data(), in.gcount());
  }
  if (in.bad()) return std::nullopt;
  return hex(XXH3_128bits_digest(state.get()));
}

std::optional<std::string> FileDigests::of(const std::string& path) {
  auto it = known_.find(path);
  if (it == known_.end()) it = known_.emplace(path, file_content_hash_hex(path)).first;
  return it->second;
}

}  // namespace orch
