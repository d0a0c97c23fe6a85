#include "sweep/progress.h"

#include <fmt/format.h>

#include <cmath>

#include "text/terminal_text.h"

namespace orch::sweep {

std::string format_duration(double seconds) {
  const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  const long long h = total / 3600, m = (total % 3600) / 60, s = total % 60;
  if (h > 0) return fmt::format("{}:{:02}:{:02}", h, m, s);
  return fmt::format("{}:{:02}", m, s);
}

std::string format_progress(const ProgressState& p, const std::string& name, int repeat,
                            const std::string& where, const ResultDocument& doc) {
  std::string outcome = doc.status ? to_string(*doc.status) : "?";
  if (doc.ok() && !doc.metrics.is_null()) {
    outcome += fmt::format(", {:.1f} img/s", doc.core_metrics().images_per_s.value_or(0.0));
  } else if (doc.error) {
    std::string err = *doc.error;
    if (auto nl = err.find('\n'); nl != std::string::npos) err.resize(nl);
    if (err.size() > 120) err = err.substr(0, 117) + "...";
    outcome += ": " + terminal_text(err);
  }
  // The remaining runs share the usable slots; the mean of what finished so far is the guess.
  const double eta = p.mean_run_s * std::ceil(static_cast<double>(p.remaining) /
                                              static_cast<double>(std::max(1, p.parallel)));
  std::string failures = std::to_string(p.failures);
  if (p.diverged > 0) failures += fmt::format(" ({} diverged)", p.diverged);
  std::string line = fmt::format("[{}/{}] {} (repeat {}) on {}: {} | failures {} | elapsed {}",
                                 p.done, p.total, terminal_text(name), repeat, where, outcome,
                                 failures, format_duration(p.elapsed_s));
  if (p.remaining > 0) line += ", ETA " + format_duration(eta);
  if (p.best) {
    line += fmt::format(" | best {} {:.1f} img/s", terminal_text(p.best->first), p.best->second);
  }
  return line;
}

}  // namespace orch::sweep
