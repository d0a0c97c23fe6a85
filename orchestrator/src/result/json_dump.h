// JSON text of trees that can hold text orch did not write itself: file names, names given on
// the command line, environment variables, a child's output. Such text need not be UTF-8 (a
// Latin-1 file name, a stray byte in a variable), and nlohmann::json's plain dump() throws
// type_error.316 on it, which would fail a whole listing, a plan or a run for one name.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace orch {

/// j.dump(indent) with every byte sequence that is not UTF-8 replaced by U+FFFD, so the text is
/// always valid JSON. Identical to j.dump(indent) when all of j's text is UTF-8.
std::string json_dump(const nlohmann::json& j, int indent = -1);

/// Whether `text` is UTF-8 as nlohmann::json accepts it (RFC 3629: no overlong forms, no
/// surrogates, nothing past U+10FFFF).
bool is_utf8(std::string_view text);

/// `text` as JSON without losing a byte: the string itself where it is UTF-8, else
/// {"bytes_hex": "<two hex digits a byte>"}. For what a process hands its own child (a worker's
/// run paths under a --db whose name is Latin-1 must arrive as they are, not with U+FFFD).
nlohmann::json lossless_text(std::string_view text);

/// The bytes lossless_text encoded; throws std::invalid_argument for any other JSON.
std::string lossless_text_from(const nlohmann::json& j);

}  // namespace orch
