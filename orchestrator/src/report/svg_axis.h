// Axis arithmetic for the report's SVG charts: "nice" tick steps (1, 2 or 5 times a power of
// ten) covering a data range, and numbers formatted for tick labels and direct labels.
#pragma once

#include <string>
#include <vector>

namespace orch {

struct AxisTicks {
  double lo = 0, hi = 1, step = 1;  ///< the axis spans [lo, hi]; ticks every `step`
  std::vector<double> values;       ///< lo, lo + step, ..., hi
  int decimals = 0;                 ///< enough to tell two neighbouring ticks apart
};

/// About `target` ticks covering [lo, hi]; a degenerate or non-finite range becomes [lo, lo+1].
AxisTicks nice_ticks(double lo, double hi, int target = 5);

/// `value` with `decimals` decimals and thousands separated by commas: 4,706.7.
std::string format_grouped(double value, int decimals);

/// A coordinate for an SVG attribute: at most two decimals, no trailing zeros.
std::string svg_num(double v);

}  // namespace orch
