// One sweep, one writer: an exclusive flock(2) on a lock file beside the database, held for the
// sweep's lifetime. The kernel drops it when the holder dies (even by kill -9), so a stale lock
// never blocks a resume, and while we hold it any run still marked `running` in that sweep
// belongs to a dead process.
#pragma once

#include <string>

namespace orch::sweep {

class SweepLock {
 public:
  /// Takes the lock or throws std::runtime_error naming the holder (pid, host) from the file.
  explicit SweepLock(const std::string& path);
  SweepLock(const SweepLock&) = delete;
  SweepLock& operator=(const SweepLock&) = delete;
  ~SweepLock();

 private:
  int fd_ = -1;
};

/// The lock file for sweep `name` of database `db_path`: "<db>.<name>.lock" beside the real
/// database file (real_db_path), the name encoded by sweep_file_component.
std::string lock_path(const std::string& db_path, const std::string& sweep_name);

}  // namespace orch::sweep
