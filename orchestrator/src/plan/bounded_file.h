// Reading a file orch did not necessarily write (a run's specification, a result document, a
// script's report, a Slurm task's result) with bounds: whatever stands at the path (a FIFO that
// would block forever, /dev/zero that never ends, a folder), the read neither blocks nor takes
// more than its limit, and the error names the path and what it is.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace orch {

/// Why read_bounded_file refused or failed, as "PATH: ..." (a whole message).
struct BoundedReadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The bytes of `path`: a regular file (symbolic links followed) of at most `max_bytes`.
/// Throws BoundedReadError saying that it is not a regular file (and what it is), that it is
/// larger than the limit (`what` names the kind of file: "a result document"), or the system's
/// reason it cannot be read. Never blocks on a FIFO; never reads more than max_bytes + 1 bytes.
std::string read_bounded_file(const std::string& path, std::size_t max_bytes,
                              const std::string& what);

/// What a stat() or lstat() mode is, for a message: "a folder", "a FIFO (named pipe)", "a
/// character device", "a symbolic link", ...
std::string describe_file_type(unsigned mode);

/// Limits for the files orch hands between its own processes: far above any real one, far
/// below what would exhaust memory.
constexpr std::size_t kMaxRunSpecBytes = std::size_t{16} << 20;          ///< 16 MiB
constexpr std::size_t kMaxResultDocumentBytes = std::size_t{256} << 20;  ///< 256 MiB

}  // namespace orch
