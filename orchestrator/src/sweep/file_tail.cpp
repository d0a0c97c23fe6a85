#include "sweep/file_tail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace orch::sweep {

std::string file_tail(const std::string& path, std::size_t max_bytes) {
  // The log is the run's, whose program could have replaced it: a link is not followed (its
  // target's text would land in the database), a FIFO is not waited on, only a regular file
  // is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return {};
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  const std::size_t start = size > max_bytes ? size - max_bytes : 0;
  std::string text(size - start, '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n =
        ::pread(fd, text.data() + done, text.size() - done, static_cast<off_t>(start + done));
    if (n <= 0) break;  // shrunk meanwhile, or unreadable: what was read is the tail
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  text.resize(done);
  if (start > 0) {
    const auto nl = text.find('\n');
    if (nl != std::string::npos && nl + 1 < text.size()) text.erase(0, nl + 1);
  }
  return text;
}

}  // namespace orch::sweep
