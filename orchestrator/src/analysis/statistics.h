// Small statistics for repeated measurements: mean, sample standard deviation and the 95%
// confidence interval of the mean (Student t with n-1 degrees of freedom). Used by the
// ranking (report/) and to fill the database's student_t_975 table, so the SQL view and
// `orch rank` agree to the last digit.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace orch::analysis {

/// The 0.975 quantile of Student's t with `dof` degrees of freedom (dof >= 1): the factor of a
/// two-sided 95% interval. Computed with Boost.Math.
double t_quantile_975(std::int64_t dof);

struct Summary {
  std::int64_t n = 0;
  double mean = 0;
  std::optional<double> stddev;     ///< sample standard deviation; none when n < 2
  std::optional<double> ci95_half;  ///< t(0.975, n-1) * stddev / sqrt(n); none when n < 2
  double lower() const { return mean - ci95_half.value_or(0.0); }
  double upper() const { return mean + ci95_half.value_or(0.0); }
};

/// Summarises the values (n = 0 gives a zero Summary).
Summary summarize(const std::vector<double>& values);

/// A measurement whose 95% interval reaches further than this share of its mean either side is
/// noisy: its repeats disagree too much for a difference of that size to be told from chance.
/// torch.utils.benchmark warns at the same 10% (of the median, by the interquartile range).
constexpr double kNoisyShare = 0.10;

/// The interval's half-width as a share of the mean (0.14 for ±14%); none when n < 2 or the
/// mean is 0.
std::optional<double> relative_ci95(const Summary& s);

/// relative_ci95(s) > kNoisyShare.
bool is_noisy(const Summary& s);

}  // namespace orch::analysis
