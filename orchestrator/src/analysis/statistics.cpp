// Mean, standard deviation and Student-t confidence interval.
#include "analysis/statistics.h"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <stdexcept>

namespace orch::analysis {

double t_quantile_975(std::int64_t dof) {
  if (dof < 1) throw std::invalid_argument("t quantile needs at least one degree of freedom");
  return boost::math::quantile(boost::math::students_t(static_cast<double>(dof)), 0.975);
}

Summary summarize(const std::vector<double>& values) {
  Summary s;
  s.n = static_cast<std::int64_t>(values.size());
  if (s.n == 0) return s;
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(s.n);
  if (s.n < 2) return s;
  // Deviations from the mean (two passes), as the SQL view does.
  double ss = 0;
  for (double v : values) ss += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(ss / static_cast<double>(s.n - 1));
  s.ci95_half = t_quantile_975(s.n - 1) * *s.stddev / std::sqrt(static_cast<double>(s.n));
  return s;
}

std::optional<double> relative_ci95(const Summary& s) {
  if (!s.ci95_half || s.mean == 0) return std::nullopt;
  return *s.ci95_half / std::fabs(s.mean);
}

bool is_noisy(const Summary& s) {
  const auto share = relative_ci95(s);
  return share && *share > kNoisyShare;
}

}  // namespace orch::analysis
