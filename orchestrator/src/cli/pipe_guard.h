// Standard output that may be a pipe whose reader goes away (`orch sweep x.yaml | head`, a
// closed ssh session, a log shipper that died). orch ignores SIGPIPE, so such a write fails with
// EPIPE instead of killing the process silently; this stream notices it and raises a flag, so
// the sweep stops as it does for SIGTERM (runs in flight interrupted, exit 3).
#pragma once

#include <atomic>
#include <ostream>
#include <streambuf>

namespace orch::cli {

/// Ignores SIGPIPE for the whole process (children get the default back: see ChildProcess).
void ignore_sigpipe();

/// Writes straight to file descriptor `fd` (no buffering: a line is on the terminal when the
/// scheduler has written it). On EPIPE it sets `closed` and drops everything after; any other
/// failure (a full disk under `> file`) is kept in error() and the stream goes bad.
class PipeGuardBuf final : public std::streambuf {
 public:
  PipeGuardBuf(int fd, std::atomic<bool>& closed) : fd_(fd), closed_(closed) {}
  /// The errno of the first write that failed other than with EPIPE, or 0.
  int error() const { return error_; }

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;

 private:
  bool write_all(const char* s, std::size_t n);
  int fd_;
  std::atomic<bool>& closed_;
  bool broken_ = false;
  int error_ = 0;
};

class PipeGuardStream final : public std::ostream {
 public:
  PipeGuardStream(int fd, std::atomic<bool>& closed) : std::ostream(nullptr), buf_(fd, closed) {
    rdbuf(&buf_);
  }

 private:
  PipeGuardBuf buf_;
};

}  // namespace orch::cli
