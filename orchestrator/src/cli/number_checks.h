// Number options checked as the user wrote them: a finite number inside what is allowed.
// CLI11's NonNegativeNumber, PositiveNumber and Range let "nan" through (every comparison with
// NaN is false) and refuse "-1" or "inf" as "not in range 0.000000 to 1797...(300 digits)": these
// refuse NaN and infinities and say the allowed range in words.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace orch::cli {

/// A finite number >= 0 (help: NONNEGATIVE).
CLI::Validator non_negative_number();

/// A finite number > 0 (help: POSITIVE).
CLI::Validator positive_number();

/// A finite number from `low` to `high`, both allowed (help: "<type> in [low - high]", as
/// CLI::Range says it; `type` is FLOAT or INT).
CLI::Validator number_between(double low, double high, const std::string& type);

}  // namespace orch::cli
