// Well-formed UTF-8 as RFC 3629 defines it (what nlohmann::json accepts): the one check that
// terminal_text (what a terminal shows) and json_dump's is_utf8 (what JSON can hold) share.
#pragma once

#include <cstddef>
#include <string_view>

namespace orch {

/// The length of the well-formed UTF-8 sequence at `i` (no overlong forms, no surrogates,
/// nothing past U+10FFFF), 1 for ASCII; 0 where the byte at `i` starts none.
int utf8_length(std::string_view text, std::size_t i);

}  // namespace orch
