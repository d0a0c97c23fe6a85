// Reading a child's pipes without blocking on any one of them: poll with a timeout, whatever is
// there handed to each pipe's sink. A child that writes to stderr while its stdout is full, or
// one that hangs writing nothing, never stalls the reader past its deadline.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace orch::process {

class PipeReader {
 public:
  using Clock = std::chrono::steady_clock;
  using Sink = std::function<void(std::string_view)>;

  /// Reads `fd` (not owned; made non-blocking) into `sink` until it reaches end-of-file.
  void add(int fd, Sink sink);

  /// Waits up to `timeout` for something on the open pipes and hands it over. Returns whether
  /// any pipe is still open.
  bool read_for(std::chrono::milliseconds timeout);
  /// read_for until every pipe is closed or `deadline` has passed; whether all are closed.
  bool read_until(Clock::time_point deadline);

  /// Whether any pipe has not reached end-of-file (or an error) yet.
  bool open() const;

 private:
  struct Source {
    int fd;
    Sink sink;
    bool open = true;
  };
  /// Reads what `s` holds now, up to a bound (a pipe that never empties must not starve the
  /// others); false at its end.
  static bool drain(Source& s);

  std::vector<Source> sources_;
};

/// The last bytes of a stream, kept as it goes by: a child's stderr for the error it ends with.
class TailBuffer {
 public:
  explicit TailBuffer(std::size_t max_bytes) : max_(max_bytes) {}
  void append(std::string_view text);
  /// The last `max_bytes`, from a line start where one is in it.
  std::string text() const;

 private:
  std::size_t max_;
  std::string kept_;
};

}  // namespace orch::process
