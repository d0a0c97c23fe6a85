#include "text/utf8.h"

namespace orch {

int utf8_length(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) {
    return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u;
  };
  const unsigned b = at(i);
  if (b < 0x80) return 1;
  int n = 0;
  unsigned lo = 0x80, hi = 0xbf;  // the first continuation byte's range
  if (b >= 0xc2 && b <= 0xdf) {
    n = 1;
  } else if (b >= 0xe0 && b <= 0xef) {
    n = 2;
    if (b == 0xe0) lo = 0xa0;
    if (b == 0xed) hi = 0x9f;
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 3;
    if (b == 0xf0) lo = 0x90;
    if (b == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  for (int k = 1; k <= n; ++k) {
    const unsigned c = at(i + static_cast<std::size_t>(k));
    if (c < (k == 1 ? lo : 0x80u) || c > (k == 1 ? hi : 0xbfu)) return 0;
  }
  return n + 1;
}

}  // namespace orch
