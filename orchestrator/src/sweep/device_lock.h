// One measurement per device at a time. Two sweeps (or a sweep and an `orch run`) on one GPU
// both finish and both record numbers several times too slow, without a word: each device
// (a GPU by its UUID, the host's CPU for CPU runs) has a lock file in one folder of the
// machine, flock(2)ed by whoever measures on it for as long as it does. The kernel drops a
// lock when its holder dies, even by kill -9, so a lock is never stale.
//
// The folder is shared by every user of the machine: ORCH_LOCK_DIR, else /run/lock (the
// system's place for lock files, root's, world-writable and sticky on Debian and Ubuntu), else
// /tmp; the files are named orch-<device>.lock. Since a neighbour can write there, orch
// refuses a folder that is a link, another user's, or writable by others without the sticky
// bit (they could swap a lock file under its holder), and opens lock files without following
// links, regular files only.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace orch::sweep {

/// A device to lock: `key` names its lock file ("cpu", "gpu-GPU-8a1f..."), `label` is what
/// messages call it ("GPU 0 (GPU-8a1f...)", "the CPU").
struct LockedDevice {
  std::string key, label;
};

/// A device is held by someone else and the caller asked not to wait (`--no-wait`).
class DeviceBusy : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The folder of the device locks (see above); ORCH_LOCK_DIR's is created (mode 1777) when
/// missing. Throws
/// std::runtime_error naming the folder when it cannot be used safely.
std::string device_lock_dir();

/// The locks this process holds, released when it is destroyed (or the process ends).
class DeviceLocks {
 public:
  DeviceLocks() = default;
  DeviceLocks(DeviceLocks&& other) noexcept;
  DeviceLocks& operator=(DeviceLocks&& other) noexcept;
  DeviceLocks(const DeviceLocks&) = delete;
  DeviceLocks& operator=(const DeviceLocks&) = delete;
  ~DeviceLocks();

  /// Takes every device's lock, in key order (two sweeps that want the same two GPUs never
  /// hold one each), writing `holder` (who we are: command, sweep, pid, user, since when) into
  /// each. A device held by another: without `wait`, throws DeviceBusy naming the device and
  /// its holder; with `wait`, says so once on `out` and tries again every `poll_s` seconds
  /// until it is taken, or returns nullopt (holding nothing) once `stop` is set. Throws
  /// std::runtime_error for a lock folder or file it refuses.
  static std::optional<DeviceLocks> acquire(const std::vector<LockedDevice>& devices,
                                            const std::string& holder, bool wait, std::ostream& out,
                                            const std::atomic<bool>& stop, double poll_s = 0.5);

  /// The keys held, in order.
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  std::vector<int> fds_;
  std::vector<std::string> keys_;
};

/// Opens `key`'s lock file in `dir` (device_lock_dir) and tries once to take it: returns the
/// descriptor that holds it (`me` written in), or -1 with `holder` set to the holder's text.
/// Throws std::runtime_error for a lock file it refuses.
int try_lock_file(const std::string& dir, const std::string& key, const std::string& me,
                  std::string& holder);

/// "orch <command> '<name>' (pid N, user U, since <UTC time, ISO 8601>)": what a holder writes.
std::string lock_holder_text(const std::string& command, const std::string& name);

/// The lock file's name for a device key: "orch-<key>.lock", the key's characters other than
/// letters, digits, '-', '_' and '.' made '_'.
std::string device_lock_file_name(const std::string& key);

}  // namespace orch::sweep
