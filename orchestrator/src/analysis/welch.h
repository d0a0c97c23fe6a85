// Welch's t-test: are two configurations' mean throughputs different, given their repeats,
// without assuming equal variances (two nights on different drivers need not be equally noisy).
#pragma once

#include <optional>

#include "analysis/statistics.h"

namespace orch::analysis {

struct WelchResult {
  double t = 0;              ///< (mean b - mean a) / standard error of the difference
  double dof = 0;            ///< Welch-Satterthwaite degrees of freedom (fractional)
  double critical = 0;       ///< the two-sided 95% quantile of Student's t at `dof`
  bool significant = false;  ///< |t| > critical: the means differ at 95%
};

/// The two-sided test at 95% of b's mean against a's. None when a side has fewer than two
/// values (no variance to judge by). Two sides without any spread differ exactly when their
/// means do.
std::optional<WelchResult> welch_test_95(const Summary& a, const Summary& b);

}  // namespace orch::analysis
