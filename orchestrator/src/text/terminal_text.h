// Text from experiment files, command lines and child processes (run names, descriptions, error
// lines) shown in a terminal: an escape sequence in a name must not move the cursor, clear the
// screen or retitle the window of whoever reads the ranking, and a newline must not forge a
// line of the table.
#pragma once

#include <string>
#include <string_view>

namespace orch {

/// `text` with its control characters made visible: C0 controls and DEL as `\n`, `\r`, `\t` or
/// `\xHH`, C1 controls (U+0080..U+009F in UTF-8) as `\u00HH`, and the invisible characters
/// that reorder a line (bidirectional marks, embeddings, overrides, isolates: U+202E and the
/// like) or break it (U+2028, U+2029) as `\uHHHH`; a byte that is not part of well-formed
/// UTF-8 (Latin-1, a lone 0x9b) as `\xHH`. Everything else, UTF-8 included, is kept.
std::string terminal_text(std::string_view text);

}  // namespace orch
