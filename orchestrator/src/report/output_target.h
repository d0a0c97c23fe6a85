// Where `orch export -o` and `orch report -o` may write: a typo or a shell completion must not
// replace the results database (`-o results.db`) or any file that is not an earlier output of
// the same kind.
#pragma once

#include <string>

namespace orch {

enum class OutputKind { kCsv, kJson, kHtml };

/// Throws InputError, naming the path and why, when `output` is a symbolic link (never written
/// through), the database at `db_path` (under any spelling), a folder, an SQLite database, or an
/// existing non-empty file that does not start as an orch export of this kind does (CSV: its header
/// line; JSON: an array of run objects; HTML: an orch report). For kHtml, which is written by
/// renaming over the target, anything but a regular file is refused too; an export may go to a
/// device or FIFO (/dev/null, a named pipe), written in place, never replaced.
void check_output_target(const std::string& output, const std::string& db_path, OutputKind kind);

}  // namespace orch
