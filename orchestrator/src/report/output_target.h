// Where `orch export -o`, `orch report -o` and `orch exec --out` may write: a typo or a shell
// completion must not replace the results database (`-o results.db`), one of its journal files,
// or any file that is not an earlier output of the same kind.
#pragma once

#include <string>

namespace orch {

enum class OutputKind { kCsv, kJson, kHtml, kResultDocument, kTrace };

/// Throws InputError, naming the path and why, when `output` is a symbolic link (never written
/// through), the database at `db_path` (under any spelling) or its `-wal`, `-journal` or `-shm`
/// file, such a file of any SQLite database (named DB-wal, DB-journal or DB-shm beside one), a
/// folder, an SQLite database or journal, or an existing non-empty file that does not start as
/// an orch output of this kind does (CSV: its header line; JSON: an array of run objects; HTML:
/// an orch report; a result document: a JSON object whose format is "orch.result"; a profiler
/// trace: a JSON object whose first key is "schemaVersion" or "traceEvents"). For kHtml and
/// kTrace, which are written by renaming over the target, anything but a regular file is refused
/// too; the other kinds may go to a device or FIFO (/dev/null, a named pipe), written in place,
/// never replaced.
void check_output_target(const std::string& output, const std::string& db_path, OutputKind kind);

}  // namespace orch
