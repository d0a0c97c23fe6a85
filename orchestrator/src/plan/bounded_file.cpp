// read_bounded_file (bounded_file.h): open without blocking, check what the descriptor is, read
// at most one byte past the limit.
#include "plan/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace orch {
namespace {

std::string mib(std::size_t bytes) {
  return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                : std::to_string(bytes) + " bytes";
}

}  // namespace

std::string describe_file_type(unsigned mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";  // an lstat()'s mode
  return "not a regular file";
}

std::string read_bounded_file(const std::string& path, std::size_t max_bytes,
                              const std::string& what) {
  const auto fail = [&](const std::string& why) { return BoundedReadError(path + ": " + why); };
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw fail(std::string("cannot read it: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw fail(std::string("cannot read it: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw fail("it is " + describe_file_type(st.st_mode) + ", not a regular file; " + what +
               " is a regular file");
  const auto over = [&] {
    return fail("larger than " + mib(max_bytes) + ", the limit for " + what);
  };
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) throw over();
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail(std::string("cannot read it: ") + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > max_bytes) throw over();  // it grew while being read
  }
  return text;
}

}  // namespace orch
