#include "process/log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace orch::process {

UniqueFd open_log_file(const std::string& path, bool devices) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw LogFileError("cannot open " + path + ": " + std::strerror(err), err);
  }
  UniqueFd log(fd);
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0;
  const bool device = ok && devices && S_ISCHR(st.st_mode);
  if (!ok || (!S_ISREG(st.st_mode) && !device)) {
    throw LogFileError("refusing the log " + path + ": it is not a regular file", 0);
  }
  if (!device && st.st_nlink > 1) {
    throw LogFileError("refusing the log " + path +
                           ": it has another name (a hard link), and orch writes only a file of "
                           "its own there; remove it",
                       0);
  }
  if (!device && ::ftruncate(fd, 0) != 0) {
    const int err = errno;
    throw LogFileError("cannot truncate " + path + ": " + std::strerror(err), err);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return log;
}

}  // namespace orch::process
