// One sweep, one writer: an exclusive flock(2) on a lock file beside the database, held for the
// sweep's lifetime. The kernel drops it when the holder dies (even by kill -9), so a stale lock
// never blocks a resume, and while we hold it any run still marked `running` in that sweep
// belongs to a dead process. The holder removes the file when the sweep ends, so a finished
// sweep leaves no file beside the database (one killed leaves it, unlocked, for the next to
// take). Whoever takes a lock checks that the file it locked is still the one at the path: a
// file removed by its last holder between our open and our flock is no lock at all.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>

namespace orch::sweep {

/// Another process holds this sweep (of this database file, through any path to it).
struct SweepAlreadyRunning : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class SweepLock {
 public:
  /// Takes the lock or throws SweepAlreadyRunning naming the holder (pid, host) from the file
  /// (std::runtime_error for a lock file it refuses).
  explicit SweepLock(const std::string& path);
  SweepLock(const SweepLock&) = delete;
  SweepLock& operator=(const SweepLock&) = delete;
  /// Removes the lock file (when it is still ours) and releases the lock.
  ~SweepLock();

  /// Also locks the database file itself: by its device and inode in the device lock folder
  /// (device_lock.h), which names the holder, and with a lock on one byte of the file (an
  /// open file description lock at an offset given by the sweep's name), which meets every
  /// other path to it (a hard link, a bind mount) whatever ORCH_LOCK_DIR each process has.
  /// Call once the database file exists. Throws SweepAlreadyRunning when another process holds
  /// this sweep of the same file, std::runtime_error when the file cannot be locked; either way
  /// nothing of the attempt stays held, so it may be called again.
  void hold_database(const std::string& db_path, const std::string& sweep_name,
                     const std::string& command = "sweep");

 private:
  /// Opens and flocks the file at path_; false when the file was replaced or removed before
  /// the flock took (try again). Throws as the constructor does.
  bool try_take();
  /// The byte lock of hold_database.
  void lock_database_file(const std::string& db_path, const std::string& sweep_name);

  std::string path_;
  int fd_ = -1;
  int inode_fd_ = -1;
  int db_fd_ = -1;  ///< the database file's descriptor holding the byte lock; never closed
  off_t db_byte_ = 0;
  dev_t db_dev_ = 0;
  ino_t db_ino_ = 0;
};

/// The lock file for sweep `name` of database `db_path`: "<db>.<name>.lock" beside the real
/// database file (real_db_path), the name encoded by sweep_file_component (shortened with a hash
/// when long).
std::string lock_path(const std::string& db_path, const std::string& sweep_name);

}  // namespace orch::sweep
