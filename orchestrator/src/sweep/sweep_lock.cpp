#include "sweep/sweep_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "plan/content_hash.h"
#include "sweep/device_lock.h"
#include "sweep/environment_fault.h"
#include "sweep/sweep_paths.h"

namespace orch::sweep {

SweepLock::SweepLock(const std::string& path) {
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
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("refusing the lock file " + path +
                             ": it is not a regular file; remove it and run the same command "
                             "again");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char holder[256] = {};
    const ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
    std::string who = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : "unknown";
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("this sweep is already running (lock " + path + " held by " + who +
                             "); wait for it to finish or stop it first");
  }
  char host[128] = {};
  gethostname(host, sizeof host - 1);
  const std::string me = "pid " + std::to_string(::getpid()) + " on " + host + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t w = ::pwrite(fd_, me.data(), me.size(), 0);
  }
}

SweepLock::~SweepLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
  if (inode_fd_ >= 0) ::close(inode_fd_);
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
    throw std::runtime_error(
        "this sweep is already running on the same database file through "
        "another path to it (a hard link or a mount of " +
        db_path + "): held by " + holder + "; wait for it to finish or stop it first");
  }
}

std::string lock_path(const std::string& db_path, const std::string& sweep_name) {
  return real_db_path(db_path) + "." + sweep_file_component(sweep_name) + ".lock";
}

}  // namespace orch::sweep
