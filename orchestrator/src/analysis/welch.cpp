// Welch's t-test (see welch.h).
#include "analysis/welch.h"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>

namespace orch::analysis {

std::optional<WelchResult> welch_test_95(const Summary& a, const Summary& b) {
  if (a.n < 2 || b.n < 2 || !a.stddev || !b.stddev) return std::nullopt;
  const double va = *a.stddev * *a.stddev / static_cast<double>(a.n);
  const double vb = *b.stddev * *b.stddev / static_cast<double>(b.n);
  WelchResult r;
  const double se = std::sqrt(va + vb);
  if (se == 0) {
    r.dof = static_cast<double>(a.n + b.n - 2);
    r.critical = boost::math::quantile(boost::math::students_t(r.dof), 0.975);
    r.t = a.mean == b.mean
              ? 0.0
              : std::copysign(std::numeric_limits<double>::infinity(), b.mean - a.mean);
    r.significant = a.mean != b.mean;
    return r;
  }
  r.t = (b.mean - a.mean) / se;
  const double num = (va + vb) * (va + vb);
  const double den =
      va * va / static_cast<double>(a.n - 1) + vb * vb / static_cast<double>(b.n - 1);
  r.dof = den > 0 ? num / den : static_cast<double>(a.n + b.n - 2);
  r.critical = boost::math::quantile(boost::math::students_t(r.dof), 0.975);
  r.significant = std::fabs(r.t) > r.critical;
  return r;
}

}  // namespace orch::analysis
