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
  throw EnvironmentFault(write_fault_text(path, err), /*database=*/false, err);
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

namespace {

// Writes all of `content` to `fd` and closes it; an errno on failure (the descriptor closed).
int write_and_close(int fd, std::string_view content) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return err;
    }
    done += static_cast<std::size_t>(n);
  }
  // A full disk can surface only at close (NFS, delayed allocation): checked too.
  if (::close(fd) != 0 && errno != EINTR) return errno;
  return 0;
}

constexpr const char* kHardLinkReason =
    "it has another name (a hard link), and orch writes only a file of its own there; remove it";

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw EnvironmentFault("refusing to write " + path + ": " + why);
}

// Refuses what orch must never write through or replace: a symbolic link (planted where a
// file of orch's goes, it would aim the write at its target), a folder, and, where the file is
// to be replaced, anything but a regular file.
void refuse_unless_writable(const std::string& path, const struct stat& st) {
  // No hint of -o here: these writers also write the run folders' files, which no option names
  // (export -o and report -o say theirs in report/output_target.cpp, before this is reached).
  if (S_ISLNK(st.st_mode)) {
    refuse(path, "it is a symbolic link, and orch does not write through links; remove it");
  }
  if (S_ISDIR(st.st_mode)) refuse(path, "it is a folder");
}

}  // namespace

void write_file(const std::string& path, std::string_view content) {
  if (const int err = injected_write_fault(path)) fail(path, err);
  // New: created here and nowhere else (O_EXCL). There already: opened without following a
  // final link, and truncated only once it is known to be a regular file, so a link, a FIFO or
  // a device planted at the path is refused, never written through, truncated or waited on.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) {
    fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ELOOP) {
      struct stat st {};
      if (::lstat(path.c_str(), &st) == 0) refuse_unless_writable(path, st);
    }
    if (fd >= 0) {
      struct stat st {};
      if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        refuse(path,
               "it is not a regular file (a device, FIFO or socket), and orch replaces "
               "only files");
      }
      if (st.st_nlink > 1) {
        // Another name of the same file (a hard link planted in orch's folder): truncated here,
        // the file would change under its other name too.
        ::close(fd);
        refuse(path, kHardLinkReason);
      }
      if (::ftruncate(fd, 0) != 0) {
        const int err = errno;
        ::close(fd);
        fail(path, err);
      }
    }
  }
  if (fd < 0) {
    if (errno == EISDIR) refuse(path, "it is a folder");
    if (errno == ENXIO) refuse(path, "it is a FIFO with no reader");
    fail(path, errno);
  }
  if (const int err = write_and_close(fd, content)) fail(path, err);
}

void write_file_atomically(const std::string& path, std::string_view content) {
  if (const int err = injected_write_fault(path)) fail(path, err);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    refuse_unless_writable(path, st);
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      // A device or a FIFO (/dev/null, /dev/full, a named pipe) is written to, never replaced.
      // A FIFO only while a reader has it open: opened without waiting for one (ENXIO: none),
      // then written blocking, so a FIFO planted where orch writes cannot hang it.
      const int fd = ::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0 && errno == ENXIO) refuse(path, "it is a FIFO with no reader");
      if (fd < 0) fail(path, errno);
      const int flags = ::fcntl(fd, F_GETFL);
      if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
      if (const int err = write_and_close(fd, content)) fail(path, err);
      return;
    }
    if (!S_ISREG(st.st_mode)) {
      refuse(path, S_ISBLK(st.st_mode)   ? "it is a block device, and orch writes no disk"
                   : S_ISDIR(st.st_mode) ? "it is a folder"
                                         : "it is a socket, not a regular file");
    }
  }
  // A name of this process's own beside the target, created exclusively, so neither a link
  // planted at a predictable X.tmp nor another writer's temporary file is written through;
  // removed whenever the write fails, so no half file stays behind.
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  ::unlink(tmp.c_str());  // this process's own leftover only: the name holds its pid
  try {
    write_file(tmp, content);
  } catch (const EnvironmentFault& e) {
    ::unlink(tmp.c_str());
    // Said of the path the caller gave (a missing folder, a full disk): the temporary name is
    // this function's own, and naming it would send the reader looking for a file never there.
    if (e.error() != 0) fail(path, e.error());
    throw;
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, err);
  }
}

void create_empty_file(const std::string& path) { write_file(path, {}); }

void append_to_file(const std::string& path, std::string_view content) {
  if (const int err = injected_write_fault(path)) fail(path, err);
  // Only an existing regular file, opened without following a final link and without waiting
  // on a FIFO: the file may be a run's log, which the run's own program could have replaced.
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    struct stat st {};
    if (errno == ELOOP && ::lstat(path.c_str(), &st) == 0) refuse_unless_writable(path, st);
    if (errno == ENXIO) refuse(path, "it is a FIFO with no reader");
    fail(path, errno);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(path,
           "it is not a regular file (a device, FIFO or socket), and orch appends only to "
           "files");
  }
  if (st.st_nlink > 1) {
    ::close(fd);
    refuse(path, kHardLinkReason);
  }
  if (const int err = write_and_close(fd, content)) fail(path, err);
}

void check_own_folder(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return;  // absent: created when needed
  if (S_ISLNK(st.st_mode))
    refuse(dir, "it is a symbolic link, and orch keeps its run folders out of links; remove it");
  if (!S_ISDIR(st.st_mode)) refuse(dir, "it is not a folder; remove or rename it");
}

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
