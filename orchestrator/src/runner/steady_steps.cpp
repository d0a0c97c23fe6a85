#include "runner/steady_steps.h"

#include <algorithm>

namespace orch {

bool SteadySteps::add(double step_s) {
  times_.push_back(step_s);
  return steady();
}

bool SteadySteps::steady() const {
  if (times_.size() < kWindow) return false;
  std::vector<double> w(times_.end() - static_cast<std::ptrdiff_t>(kWindow), times_.end());
  std::sort(w.begin(), w.end());
  const double median = w[kWindow / 2];
  return median > 0 && w.back() - w.front() <= kTolerance * median;
}

}  // namespace orch
