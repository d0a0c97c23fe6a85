// Tick steps and number formatting for the report's charts.
#include "report/svg_axis.h"

#include <fmt/format.h>

#include <cmath>

namespace orch {

AxisTicks nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo)) lo = 0;
  if (!std::isfinite(hi) || hi <= lo) hi = lo + 1;
  if (target < 1) target = 1;
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  AxisTicks t;
  t.step = step;
  t.lo = std::floor(lo / step + 1e-9) * step;
  t.hi = std::ceil(hi / step - 1e-9) * step;
  if (t.hi <= t.lo) t.hi = t.lo + step;
  const int n = static_cast<int>(std::lround((t.hi - t.lo) / step));
  for (int i = 0; i <= n; ++i) t.values.push_back(t.lo + i * step);
  t.decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return t;
}

std::string format_grouped(double value, int decimals) {
  if (!std::isfinite(value)) return "-";
  std::string s = fmt::format("{:.{}f}", std::fabs(value), decimals);
  const auto dot = s.find('.');
  std::string whole = s.substr(0, dot), rest = dot == std::string::npos ? "" : s.substr(dot);
  std::string grouped;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    if (i > 0 && (whole.size() - i) % 3 == 0) grouped += ',';
    grouped += whole[i];
  }
  // -0.0 prints as 0.0: only a value that shows as non-zero keeps its sign.
  const bool negative = value < 0 && std::stod(s) != 0;
  return (negative ? "-" : "") + grouped + rest;
}

std::string svg_num(double v) {
  if (!std::isfinite(v)) v = 0;
  std::string s = fmt::format("{:.2f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

}  // namespace orch
