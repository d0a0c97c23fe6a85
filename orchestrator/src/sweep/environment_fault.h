// Faults of the surroundings (a full disk, a read-only or failing file system, a database
// locked by another process past the busy timeout): not a run's failure and not the GPU's. The
// sweep stops on one, with a message that names the path and the error, leaves what it could
// not finish to a plain resume, and exits with kEnvironmentExitCode. Every file the sweep
// writes (and the result document each run's process writes) goes through the checked writers
// here, so no such fault passes unnoticed.
#pragma once

#include <cerrno>
#include <stdexcept>
#include <string>
#include <string_view>

namespace orch::sweep {

class EnvironmentFault : public std::runtime_error {
 public:
  /// `database`: the results database itself cannot be written, so nothing more is recorded.
  explicit EnvironmentFault(const std::string& what, bool database = false, int error = 0)
      : std::runtime_error(what), database_(database), error_(error) {}
  bool database() const { return database_; }
  /// The errno behind it, 0 when it was not one (a refusal, a database error).
  int error() const { return error_; }
  /// Whether the machine's storage is at fault (full, over quota, read-only, failing: exit 4)
  /// rather than the path the user gave (a file where a folder should be, no permission:
  /// exit 2, bad input).
  bool storage_fault() const { return is_storage_errno(error_); }
  static bool is_storage_errno(int err) {
    return err == ENOSPC || err == EDQUOT || err == EROFS || err == EIO;
  }

 private:
  bool database_;
  int error_;
};

/// What to tell the user when writing `path` failed with `err` (an errno value): the path, the
/// error's name and text, and what to do, e.g. "no space left on PATH (ENOSPC: No space left on
/// device): free space and run the same command again".
std::string write_fault_text(const std::string& path, int err);

/// Writes `content` to `path` and closes it, checking every step: a new file is created
/// exclusively; an existing one is opened without following a final symbolic link and
/// truncated only when it is a regular file. A link, folder, device or FIFO at `path` is
/// refused (EnvironmentFault naming it), as is any failure (write_fault_text).
void write_file(const std::string& path, std::string_view content);

/// For outputs a reader must never see half of: write_file to a temporary name of this
/// process's beside `path` (removed if anything fails), then renamed over `path`, which must
/// be absent or a regular file. A device or FIFO at `path` (/dev/null, /dev/full, a pipe) is
/// written to in place, never replaced; a symbolic link or folder is refused.
void write_file_atomically(const std::string& path, std::string_view content);

/// Creates an empty file (truncating a regular one that exists), checked like write_file.
void create_empty_file(const std::string& path);

/// Appends `content` to the regular file at `path`, which must exist: a symbolic link, FIFO,
/// device or folder there is refused (EnvironmentFault naming it), never written through or
/// waited on; any failure to write throws as write_file does.
void append_to_file(const std::string& path, std::string_view content);

/// Creates the folder and its parents, checked.
void create_directories(const std::string& dir);

/// For a folder orch makes and owns (`<db>.runs`, a sweep's folder, a run's): absent or a real
/// folder. A symbolic link (it would aim the runs' files, and their removal, elsewhere) or
/// anything else there is refused with an EnvironmentFault naming it.
void check_own_folder(const std::string& dir);

/// Removes a file; one that does not exist is fine, any other failure throws EnvironmentFault.
void remove_file(const std::string& path);

/// For tests, which cannot fill a disk unprivileged: while the environment variable
/// ORCH_TEST_FAIL_WRITE is set to a non-empty text, every checked write to a path containing
/// that text fails with ENOSPC, as on a full disk. Returns the errno to fail with, or 0.
int injected_write_fault(const std::string& path);

}  // namespace orch::sweep
