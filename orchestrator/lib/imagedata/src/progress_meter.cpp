#include "orch/imagedata/progress_meter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace orch::imagedata {
namespace {

struct Rates {
  double fraction = 0, per_s = 0, eta_s = -1;
};

Rates rates(std::int64_t done, std::int64_t total, double elapsed_s) {
  Rates r;
  r.fraction = total > 0 ? std::clamp(static_cast<double>(done) / total, 0.0, 1.0) : 1.0;
  if (elapsed_s > 0 && done > 0) {
    r.per_s = static_cast<double>(done) / elapsed_s;
    r.eta_s = static_cast<double>(std::max<std::int64_t>(0, total - done)) / r.per_s;
  }
  return r;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  const auto s = static_cast<std::int64_t>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string format_progress_bar(std::int64_t done, std::int64_t total, double elapsed_s,
                                int bar_width) {
  const Rates r = rates(done, total, elapsed_s);
  const int filled = static_cast<int>(std::floor(r.fraction * bar_width));
  return fmt::format("[{}{}] {:5.1f}%  {}/{}  {:.0f} img/s  ETA {}", std::string(filled, '#'),
                     std::string(static_cast<std::size_t>(bar_width - filled), '.'),
                     r.fraction * 100, done, total, r.per_s, format_duration(r.eta_s));
}

std::string format_progress_line(std::int64_t done, std::int64_t total, double elapsed_s) {
  const Rates r = rates(done, total, elapsed_s);
  return fmt::format("{}/{} images ({:.1f}%), {:.0f} img/s, ETA {}", done, total, r.fraction * 100,
                     r.per_s, format_duration(r.eta_s));
}

ProgressMeter::ProgressMeter(std::string label, std::int64_t total, std::ostream& out,
                             bool terminal, double line_interval_s)
    : label_(std::move(label)),
      total_(total),
      out_(out),
      terminal_(terminal),
      interval_s_(line_interval_s),
      start_(Clock::now()),
      last_(start_) {}

void ProgressMeter::draw(std::int64_t done, const std::string& extra) {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  if (terminal_)
    // \x1b[K clears what a longer earlier line left on the right.
    out_ << '\r' << label_ << ": " << format_progress_bar(done, total_, elapsed) << extra
         << "\x1b[K" << std::flush;
  else
    out_ << label_ << ": " << format_progress_line(done, total_, elapsed) << extra << '\n'
         << std::flush;
  drawn_ = true;
}

void ProgressMeter::update(std::int64_t done, const std::string& extra) {
  done_ = done;
  const auto now = Clock::now();
  // A terminal is redrawn ten times a second at most; a log gets a line every interval.
  const double since = std::chrono::duration<double>(now - last_).count();
  if (since < (terminal_ ? 0.1 : interval_s_)) return;
  last_ = now;
  draw(done, extra);
}

void ProgressMeter::finish(const std::string& extra) {
  // A job that ended before the first line needs none: its summary follows.
  if (terminal_ && drawn_) {
    draw(done_, extra);
    out_ << '\n' << std::flush;
  } else if (!terminal_ && drawn_) {
    draw(done_, extra);
  }
}

}  // namespace orch::imagedata
