#include "sweep/device_lock.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

namespace orch::sweep {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// The folder must be a real folder (not a link), owned by us or root, and where others may
// write, sticky: otherwise a neighbour could remove or replace a lock file under its holder
// and two measurements would share a device.
void check_lock_dir(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    throw std::runtime_error("the device lock folder " + dir + ": " + errno_text(errno));
  }
  const auto refuse = [&](const std::string& why) {
    throw std::runtime_error("refusing the device lock folder " + dir + ": " + why +
                             "; set ORCH_LOCK_DIR to a folder of yours (shared by everyone "
                             "who measures on this machine's devices)");
  };
  if (S_ISLNK(st.st_mode)) refuse("it is a symbolic link");
  if (!S_ISDIR(st.st_mode)) refuse("it is not a folder");
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    refuse("it belongs to another user (uid " + std::to_string(st.st_uid) + ")");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    refuse("others may write in it and it is not sticky (chmod +t)");
  }
}

bool usable_parent(const char* path) {
  struct stat st {};
  return ::lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && ::access(path, W_OK | X_OK) == 0;
}

// Printable ASCII only: a holder's text comes from a file anyone may write.
std::string printable(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return s.empty() ? "an unknown process" : s;
}

std::string read_holder(int fd) {
  char buf[512] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  return printable(n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "");
}

// Opens (or creates, readable and writable by every user) the lock file without following a
// link. An existing file is opened without O_CREAT: with fs.protected_regular, O_CREAT on
// another user's file in a sticky folder is refused even where its mode allows the open.
int open_lock_file(const std::string& path) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                  0666);
      if (fd < 0 && errno == EEXIST) continue;  // another process created it just now
      if (fd >= 0) (void)::fchmod(fd, 0666);    // despite the umask: every user locks here
    }
    if (fd < 0 && errno == EACCES) fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == ELOOP) {
        throw std::runtime_error("refusing the device lock " + path +
                                 ": it is a symbolic link, and orch does not follow links there");
      }
      throw std::runtime_error("cannot open the device lock " + path + ": " + errno_text(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw std::runtime_error("refusing the device lock " + path + ": it is not a regular file");
    }
    if (st.st_nlink > 1) {
      // The holder's text is written into it: a hard link planted in the shared folder would
      // aim that write at the file's other name.
      ::close(fd);
      throw std::runtime_error("refusing the device lock " + path +
                               ": it has another name (a hard link); remove it");
    }
    return fd;
  }
  throw std::runtime_error("cannot open the device lock " + path + ": it keeps disappearing");
}

}  // namespace

std::string device_lock_dir() {
  std::string dir;
  if (const char* v = std::getenv("ORCH_LOCK_DIR"); v && *v) {
    dir = v;
  } else {
    // The system's folders themselves (root's, sticky), not a folder of ours inside them: a
    // folder's owner may remove anyone's files in it, so whoever made it first would hold every
    // later user's locks, and a folder of another user is refused (check_lock_dir).
    dir = usable_parent("/run/lock") ? "/run/lock" : "/tmp";
    check_lock_dir(dir);
    return dir;
  }
  if (::mkdir(dir.c_str(), 01777) == 0) {
    // mkdir's mode passes through the umask; every user of the machine locks here.
    if (::chmod(dir.c_str(), 01777) != 0) {
      throw std::runtime_error("the device lock folder " + dir + ": " + errno_text(errno));
    }
  } else if (errno != EEXIST) {
    throw std::runtime_error("cannot create the device lock folder " + dir + ": " +
                             errno_text(errno) + " (ORCH_LOCK_DIR chooses another)");
  }
  check_lock_dir(dir);
  return dir;
}

std::string device_lock_file_name(const std::string& key) {
  std::string out = key;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) c = '_';
  }
  return "orch-" + out + ".lock";
}

std::string lock_holder_text(const std::string& command, const std::string& name) {
  std::string user = std::to_string(::geteuid());
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_name) user = pw->pw_name;
  char since[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  std::strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return printable("orch " + command + (name.empty() ? "" : " '" + name + "'") + " (pid " +
                   std::to_string(::getpid()) + ", user " + user + ", since " + since + ")");
}

DeviceLocks::DeviceLocks(DeviceLocks&& other) noexcept
    : fds_(std::move(other.fds_)), keys_(std::move(other.keys_)) {
  other.fds_.clear();
  other.keys_.clear();
}

DeviceLocks& DeviceLocks::operator=(DeviceLocks&& other) noexcept {
  if (this != &other) {
    for (int fd : fds_) ::close(fd);
    fds_ = std::move(other.fds_);
    keys_ = std::move(other.keys_);
    other.fds_.clear();
    other.keys_.clear();
  }
  return *this;
}

DeviceLocks::~DeviceLocks() {
  for (int fd : fds_) ::close(fd);  // closing the descriptor releases the flock
}

int try_lock_file(const std::string& dir, const std::string& key, const std::string& me,
                  std::string& holder) {
  const std::string path = dir + "/" + device_lock_file_name(key);
  const int fd = open_lock_file(path);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EWOULDBLOCK) {
      holder = read_holder(fd);
    } else {
      holder = "";
      ::close(fd);
      throw std::runtime_error("cannot lock " + path + ": " + errno_text(err));
    }
    ::close(fd);
    return -1;
  }
  const std::string line = me + "\n";
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const ssize_t w = ::pwrite(fd, line.data(), line.size(), 0);
  }
  return fd;
}

std::optional<DeviceLocks> DeviceLocks::acquire(const std::vector<LockedDevice>& devices,
                                                const std::string& holder, bool wait,
                                                std::ostream& out, const std::atomic<bool>& stop,
                                                double poll_s) {
  std::vector<LockedDevice> sorted = devices;
  std::sort(sorted.begin(), sorted.end(),
            [](const LockedDevice& a, const LockedDevice& b) { return a.key < b.key; });
  sorted.erase(
      std::unique(sorted.begin(), sorted.end(),
                  [](const LockedDevice& a, const LockedDevice& b) { return a.key == b.key; }),
      sorted.end());
  if (sorted.empty()) return DeviceLocks{};
  const std::string dir = device_lock_dir();
  DeviceLocks locks;
  for (const LockedDevice& d : sorted) {
    bool said = false;
    for (;;) {
      std::string who;
      const int fd = try_lock_file(dir, d.key, holder, who);
      if (fd >= 0) {
        locks.fds_.push_back(fd);  // closed with `locks` on every way out
        break;
      }
      if (!wait) {
        throw DeviceBusy(d.label + " is in use by " + who +
                         "; without --no-wait, orch waits for it to finish");
      }
      if (!said) {
        out << "waiting for " << d.label << ": in use by " << who << std::endl;
        said = true;
      }
      if (stop.load()) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
      if (stop.load()) return std::nullopt;
    }
    if (said) out << d.label << " is free: starting" << std::endl;
    locks.keys_.push_back(d.key);
  }
  return locks;
}

}  // namespace orch::sweep
