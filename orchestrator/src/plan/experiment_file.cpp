// Reading the experiment file with bounds: whatever path is given (a device, a FIFO, a file
// that never ends), planning reads at most kMaxExperimentFileBytes and never blocks.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "plan/bounded_file.h"
#include "plan/planner.h"

namespace orch {
namespace {

std::string too_large(const std::string& what) {
  return what + " the limit of " + std::to_string(kMaxExperimentFileBytes) +
         " bytes (1 MiB) for an experiment file";
}

}  // namespace

std::string read_experiment_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    throw PlanError(path, 0, 0, "", std::string("cannot read the file: ") + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw PlanError(path, 0, 0, "", std::string("cannot read the file: ") + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw PlanError(path, 0, 0, "",
                    "cannot read the file: it is " + describe_file_type(st.st_mode) +
                        ", not a regular file; an experiment is a YAML file");
  }
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxExperimentFileBytes) {
    throw PlanError(path, 0, 0, "",
                    too_large("the file is " + std::to_string(st.st_size) + " bytes, over"));
  }
  // Bounded even if the file grows while it is read.
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw PlanError(path, 0, 0, "", std::string("cannot read the file: ") + std::strerror(errno));
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxExperimentFileBytes) {
      throw PlanError(path, 0, 0, "", too_large("the file grew past"));
    }
  }
  return text;
}

}  // namespace orch
