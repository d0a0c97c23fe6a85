#include "cli/pipe_guard.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace orch::cli {

void ignore_sigpipe() {
  struct sigaction sa {};
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, nullptr);
}

bool PipeGuardBuf::write_all(const char* s, std::size_t n) {
  if (broken_) return true;  // the reader is gone: output is dropped, the stream stays good
  while (n > 0) {
    const ssize_t w = ::write(fd_, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      if (errno == EPIPE) {
        broken_ = true;
        closed_.store(true);
        return true;
      }
      if (error_ == 0) error_ = errno;
      return false;
    }
    s += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

PipeGuardBuf::int_type PipeGuardBuf::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  const char c = traits_type::to_char_type(ch);
  return write_all(&c, 1) ? ch : traits_type::eof();
}

std::streamsize PipeGuardBuf::xsputn(const char* s, std::streamsize n) {
  return write_all(s, static_cast<std::size_t>(n)) ? n : 0;
}

}  // namespace orch::cli
