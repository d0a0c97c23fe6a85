// A file descriptor owned by one object and closed with it.
#pragma once

#include <utility>

namespace orch::process {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  /// Closes the descriptor held (if any) and holds `fd` instead.
  void reset(int fd = -1);
  /// Gives the descriptor up without closing it.
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

/// The two ends of a new pipe, both close-on-exec. Throws std::system_error.
struct Pipe {
  UniqueFd read, write;
};
Pipe make_pipe();

}  // namespace orch::process
