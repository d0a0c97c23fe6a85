#include "process/pipe_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace orch::process {

void PipeReader::add(int fd, Sink sink) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  sources_.push_back({fd, std::move(sink), true});
}

bool PipeReader::open() const {
  return std::any_of(sources_.begin(), sources_.end(), [](const Source& s) { return s.open; });
}

bool PipeReader::drain(Source& s) {
  char buf[4096];
  for (int i = 0; i < 64; ++i) {
    const ssize_t n = ::read(s.fd, buf, sizeof buf);
    if (n > 0) {
      s.sink(std::string_view(buf, static_cast<std::size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;  // end-of-file, or an error that reading again will not cure
  }
  return true;
}

bool PipeReader::read_for(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  std::vector<Source*> which;
  for (Source& s : sources_) {
    if (!s.open) continue;
    fds.push_back({s.fd, POLLIN, 0});
    which.push_back(&s);
  }
  if (fds.empty()) return false;
  const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  if (ready <= 0) return true;  // nothing yet, or a signal: the caller comes back
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents != 0) which[i]->open = drain(*which[i]);
  }
  return open();
}

bool PipeReader::read_until(Clock::time_point deadline) {
  while (open()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    read_for(left);
  }
  return true;
}

void TailBuffer::append(std::string_view text) {
  kept_.append(text);
  // Trimmed now and then rather than on every append: four times the tail is plenty.
  if (kept_.size() > 4 * max_) kept_.erase(0, kept_.size() - max_);
}

std::string TailBuffer::text() const {
  std::string tail = kept_;
  if (tail.size() > max_) {
    tail.erase(0, tail.size() - max_);
    if (auto nl = tail.find('\n'); nl != std::string::npos && nl + 1 < tail.size())
      tail.erase(0, nl + 1);
  }
  return tail;
}

}  // namespace orch::process
