// XXH3-128 of bytes and files (see content_hash.h).
#include "plan/content_hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fstream>
#include <iterator>

namespace orch {

std::string content_hash_hex(std::string_view bytes) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(bytes.data(), bytes.size()));
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof c.digest);
  for (unsigned char b : c.digest) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::optional<std::string> file_content_hash_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return content_hash_hex(bytes);
}

}  // namespace orch
