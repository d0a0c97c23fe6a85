// The progress display of `orch dataset`'s long jobs (make, cache): on a terminal one line
// redrawn in place, a bar with the rate and the time left; elsewhere (a log file, a pipe, CI) a
// plain line now and then, so a log holds a readable history instead of carriage returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace orch::imagedata {

/// `[#####.....]  45.0%  4500/10000  1234 img/s  ETA 4m31s`, `bar_width` characters of bar.
std::string format_progress_bar(std::int64_t done, std::int64_t total, double elapsed_s,
                                int bar_width = 30);
/// `4500/10000 images (45.0%), 1234 img/s, ETA 4m31s`.
std::string format_progress_line(std::int64_t done, std::int64_t total, double elapsed_s);
/// `4m31s`, `2h05m`, `12s`; `?` when unknown.
std::string format_duration(double seconds);

class ProgressMeter {
 public:
  /// `terminal`: redraw one line (\r); else a line at most every `line_interval_s`.
  ProgressMeter(std::string label, std::int64_t total, std::ostream& out, bool terminal,
                double line_interval_s = 10.0);
  /// `extra` is appended (", 3 skipped", say). Not thread-safe: one caller.
  void update(std::int64_t done, const std::string& extra = "");
  /// The last state, and a newline on a terminal.
  void finish(const std::string& extra = "");

 private:
  using Clock = std::chrono::steady_clock;
  void draw(std::int64_t done, const std::string& extra);
  std::string label_;
  std::int64_t total_;
  std::ostream& out_;
  bool terminal_;
  double interval_s_;
  Clock::time_point start_, last_;
  std::int64_t done_ = 0;
  bool drawn_ = false;
};

}  // namespace orch::imagedata
