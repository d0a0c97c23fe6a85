// read_file (image_folder.h): one image file into memory, with what it is checked before its
// bytes are: a dataset folder is anyone's, and a multi-gigabyte file named x.JPEG (or a FIFO)
// read whole by every decoding thread would exhaust memory (or hang) before the decoder could
// say it is no image.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "orch/imagedata/dataset_error.h"
#include "orch/imagedata/image_codec.h"
#include "orch/imagedata/image_folder.h"

namespace orch::imagedata {
namespace {

namespace fs = std::filesystem;

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

[[noreturn]] void unreadable(const fs::path& path, const char* doing, int err) {
  if (err == ELOOP)
    throw DatasetError(kReasonSymlinkLoop,
                       path.string() + ": a loop of symbolic links (" + std::strerror(err) + ")");
  throw DatasetError(kReasonUnreadable, path.string() + ": " + doing + ": " + std::strerror(err));
}

// Reads up to `n` bytes at `offset` into `out`; fewer only where the file ends first.
std::size_t read_at(int fd, const fs::path& path, std::uint8_t* out, std::size_t n, off_t offset) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out + got, n - got, offset + static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) unreadable(path, "read error", errno);
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

}  // namespace

std::vector<std::uint8_t> read_file(const fs::path& path) {
  // O_NONBLOCK: a FIFO put there after the folder was listed is refused below, not waited on.
  const Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) unreadable(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) unreadable(path, "cannot stat", errno);
  if (!S_ISREG(st.st_mode)) {
    throw DatasetError(kReasonUnreadable,
                       path.string() + ": not a regular file (a FIFO, device, socket or folder)");
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::vector<std::uint8_t> data(static_cast<std::size_t>(std::min<std::uint64_t>(size, 512)));
  data.resize(read_at(f.fd, path, data.data(), data.size(), 0));
  try {
    require_image_head(data.data(), data.size());
  } catch (const DatasetError& e) {
    throw with_path(path.string(), e);
  }
  if (size > kMaxImageFileBytes) {
    throw DatasetError(kReasonUnsupported, path.string() + ": " + std::to_string(size) +
                                               " bytes, larger than the " +
                                               std::to_string(kMaxImageFileBytes >> 20) +
                                               " MiB orch reads as one image");
  }
  const std::size_t head = data.size();
  data.resize(static_cast<std::size_t>(size));
  data.resize(
      head + read_at(f.fd, path, data.data() + head, data.size() - head, static_cast<off_t>(head)));
  return data;
}

}  // namespace orch::imagedata
