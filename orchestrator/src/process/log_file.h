// A process's log file in a run folder, opened for writing: the run folders are in the user's
// folder and orch may run as root, so whatever stands at the log's name is checked at the
// opened descriptor before anything is truncated.
#pragma once

#include <stdexcept>
#include <string>

#include "process/unique_fd.h"

namespace orch::process {

/// Why open_log_file refused or failed: the whole message, and the errno (0 for a refusal).
struct LogFileError : std::runtime_error {
  LogFileError(const std::string& what, int err) : std::runtime_error(what), error(err) {}
  int error;
};

/// Opens `path` for writing, created or emptied: never through a final symbolic link, never
/// waiting on a FIFO, and only a regular file of one name (a hard link planted at the name
/// would have the file's other name truncated and overwritten too). With `devices`, a
/// character device (/dev/null) is opened too, written in place. The descriptor is
/// close-on-exec and blocking. Throws LogFileError naming the path.
UniqueFd open_log_file(const std::string& path, bool devices = false);

}  // namespace orch::process
