#include "sweep/sweep_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "plan/content_hash.h"
#include "sweep/device_lock.h"
#include "sweep/environment_fault.h"
#include "sweep/sweep_paths.h"

namespace orch::sweep {

namespace {

// Whether the file open at `fd` is the one now at `path` (same device and inode).
bool same_file(int fd, const std::string& path) {
  struct stat open_st {};
  struct stat path_st {};
  return ::fstat(fd, &open_st) == 0 && ::lstat(path.c_str(), &path_st) == 0 &&
         open_st.st_dev == path_st.st_dev && open_st.st_ino == path_st.st_ino;
}

// The descriptors of database files this process opened for their locks, by device and inode,
// that no lock holds now: never closed while the process runs, since closing any descriptor of
// a file drops every POSIX lock the process holds on it, SQLite's included.
std::mutex g_spare_mutex;
std::map<std::pair<dev_t, ino_t>, std::vector<int>> g_spare_fds;

// The byte of the database file that stands for sweep `name`: past 2^62, far from the bytes
// SQLite locks (at 1 GiB), at an offset given by the name's digest.
off_t sweep_byte(const std::string& name) {
  const std::uint64_t digest = std::stoull(content_hash_hex(name).substr(0, 15), nullptr, 16);
  return static_cast<off_t>((std::uint64_t{1} << 62) + digest);
}

// Takes an open file description lock (F_OFD_SETLK) on `byte` of the file at `fd`: unlike a
// lock file, it meets every path to the file, a hard link, a bind mount or another
// ORCH_LOCK_DIR, and the kernel drops it when its holder dies.
bool lock_byte(int fd, off_t byte, short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = byte;
  fl.l_len = 1;
  return ::fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

}  // namespace

SweepLock::SweepLock(const std::string& path) : path_(path) {
  // A holder removes the file as it ends: a lock taken on the removed file is retried on the
  // new one. The bound only guards against a path that keeps changing under us.
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (try_take()) return;
  }
  throw std::runtime_error("cannot take the lock file " + path +
                           ": it was replaced 100 times while orch tried to lock it");
}

bool SweepLock::try_take() {
  const std::string& path = path_;
  // Never through a link planted at the lock's name (it would aim the truncation below at the
  // link's target), and only a regular file: a FIFO or device there is refused, not opened.
  const int injected = injected_write_fault(path);  // tests: a full disk without filling one
  fd_ = injected != 0
            ? -1
            : ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int err = injected != 0 ? injected : errno;
    // A full, read-only or failing file system is the machine's fault, not the command's.
    if (EnvironmentFault::is_storage_errno(err))
      throw EnvironmentFault(write_fault_text(path, err), /*database=*/false, err);
    if (err == ELOOP) {
      throw std::runtime_error("refusing the lock file " + path +
                               ": it is a symbolic link, and orch does not write through links; "
                               "remove it and run the same command again");
    }
    throw std::runtime_error("cannot open lock file " + path + ": " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
    // A hard link too: the holder's text, written below, would change the file's other name.
    const bool linked = S_ISREG(st.st_mode);
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("refusing the lock file " + path + ": it " +
                             (linked ? "has another name (a hard link)" : "is not a regular file") +
                             "; remove it and run the same command again");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char holder[256] = {};
    const ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
    std::string who = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : "unknown";
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    ::close(fd_);
    fd_ = -1;
    throw SweepAlreadyRunning("this sweep is already running (lock " + path + " held by " + who +
                              "); wait for it to finish or stop it first");
  }
  if (!same_file(fd_, path)) {  // its holder removed it as it ended: lock the path's new file
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  char host[128] = {};
  gethostname(host, sizeof host - 1);
  const std::string me = "pid " + std::to_string(::getpid()) + " on " + host + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t w = ::pwrite(fd_, me.data(), me.size(), 0);
  }
  return true;
}

SweepLock::~SweepLock() {
  if (fd_ >= 0) {
    // Removed while still held, so nobody can take the lock on a file about to disappear
    // without seeing (same_file) that it did. Only our own file: never one put in its place.
    if (same_file(fd_, path_)) ::unlink(path_.c_str());
    ::close(fd_);  // closing the descriptor releases the flock
  }
  if (inode_fd_ >= 0) ::close(inode_fd_);
  if (db_fd_ >= 0) {
    lock_byte(db_fd_, db_byte_, F_UNLCK);
    const std::lock_guard<std::mutex> hold(g_spare_mutex);
    g_spare_fds[{db_dev_, db_ino_}].push_back(db_fd_);
  }
}

void SweepLock::lock_database_file(const std::string& db_path, const std::string& sweep_name) {
  const auto fail = [&](int err) {
    throw std::runtime_error("cannot lock the database " + db_path + ": " + std::strerror(err));
  };
  struct stat st {};
  if (::stat(db_path.c_str(), &st) != 0) fail(errno);
  int fd = -1;
  {
    const std::lock_guard<std::mutex> hold(g_spare_mutex);
    auto& spare = g_spare_fds[{st.st_dev, st.st_ino}];
    if (!spare.empty()) {
      fd = spare.back();
      spare.pop_back();
    }
  }
  if (fd < 0 && (fd = ::open(db_path.c_str(), O_RDWR | O_CLOEXEC)) < 0) fail(errno);
  const off_t byte = sweep_byte(sweep_name);
  if (!lock_byte(fd, byte, F_WRLCK)) {
    const int err = errno;
    {
      const std::lock_guard<std::mutex> hold(g_spare_mutex);
      g_spare_fds[{st.st_dev, st.st_ino}].push_back(fd);
    }
    if (err != EAGAIN && err != EACCES) fail(err);
    throw SweepAlreadyRunning(
        "this sweep is already running on the same database file through another path to it "
        "(a hard link or a mount of " +
        db_path + ", or another ORCH_LOCK_DIR); wait for it to finish or stop it first");
  }
  db_fd_ = fd;
  db_byte_ = byte;
  db_dev_ = st.st_dev;
  db_ino_ = st.st_ino;
}

void SweepLock::hold_database(const std::string& db_path, const std::string& sweep_name,
                              const std::string& command) {
  struct stat st {};
  if (::stat(db_path.c_str(), &st) != 0) {
    throw std::runtime_error("cannot lock the database " + db_path + ": " + std::strerror(errno));
  }
  // The name's digest, not the name: any sweep name fits a file name of bounded length.
  const std::string key = "db-" + std::to_string(static_cast<unsigned long long>(st.st_dev)) + "-" +
                          std::to_string(static_cast<unsigned long long>(st.st_ino)) + "-" +
                          content_hash_hex(sweep_name);
  std::string holder;
  inode_fd_ = try_lock_file(device_lock_dir(), key, lock_holder_text(command, sweep_name), holder);
  if (inode_fd_ < 0) {
    throw SweepAlreadyRunning(
        "this sweep is already running on the same database file through "
        "another path to it (a hard link or a mount of " +
        db_path + "): held by " + holder + "; wait for it to finish or stop it first");
  }
  try {
    lock_database_file(db_path, sweep_name);
  } catch (...) {
    ::close(inode_fd_);  // held by nobody again: a later call takes it afresh
    inode_fd_ = -1;
    throw;
  }
}

std::string lock_path(const std::string& db_path, const std::string& sweep_name) {
  return real_db_path(db_path) + "." + sweep_file_component(sweep_name) + ".lock";
}

}  // namespace orch::sweep
