#include "sweep/environment_fault.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace orch::sweep {
namespace {

[[noreturn]] void fail(const std::string& path, int err) {
  throw EnvironmentFault(write_fault_text(path, err));
}

}  // namespace

std::string write_fault_text(const std::string& path, int err) {
  const char* name = strerrorname_np(err);
  const std::string why = std::string(" (") + (name ? name : "errno " + std::to_string(err)) +
                          ": " + std::strerror(err) + ")";
  switch (err) {
    case ENOSPC:
      return "no space left on " + path + why + ": free space and run the same command again";
    case EDQUOT:
      return "disk quota exceeded writing " + path + why +
             ": free space or raise the quota and run the same command again";
    case EROFS:
      return "cannot write " + path + why +
             ": the file system is read-only; remount it writable (or use another --db) and run "
             "the same command again";
    case EIO:
      return "I/O error writing " + path + why +
             ": check the disk (dmesg) and run the same command again";
    default:
      return "cannot write " + path + why + ": fix it and run the same command again";
  }
}

int injected_write_fault(const std::string& path) {
  const char* needle = std::getenv("ORCH_TEST_FAIL_WRITE");
  if (!needle || !*needle) return 0;
  return path.find(needle) != std::string::npos ? ENOSPC : 0;
}

void write_file(const std::string& path, std::string_view content) {
  if (const int err = injected_write_fault(path)) fail(path, err);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, errno);
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail(path, err);
    }
    done += static_cast<std::size_t>(n);
  }
  // A full disk can surface only at close (NFS, delayed allocation): checked too.
  if (::close(fd) != 0 && errno != EINTR) fail(path, errno);
}

void write_file_atomically(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp";
  if (const int err = injected_write_fault(path)) fail(path, err);
  write_file(tmp, content);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, err);
  }
}

void create_empty_file(const std::string& path) { write_file(path, {}); }

void create_directories(const std::string& dir) {
  if (const int err = injected_write_fault(dir)) fail(dir, err);
  std::string prefix;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    prefix = dir.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0755) == 0) continue;
    if (errno != EEXIST) fail(prefix, errno);
    // EEXIST also for a file of that name, and then every write below it fails: say so here.
    struct stat st {};
    if (::stat(prefix.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) fail(prefix, ENOTDIR);
  }
}

void remove_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) fail(path, errno);
}

}  // namespace orch::sweep
