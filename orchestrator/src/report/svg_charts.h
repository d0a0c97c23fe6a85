// The report's charts, drawn as inline SVG by our own code: a horizontal bar chart with
// interval whiskers, horizontal stacked bars (two parts), and a time series with a shaded
// window. Every label is escaped with html_escape. Printed in grey the parts stay apart: the
// two stacked parts differ in lightness and one is hatched, and values are labelled directly.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace orch {

struct BarItem {
  std::string label;                   ///< the configuration's name (raw, escaped when drawn)
  double value = 0;                    ///< the bar's length
  std::optional<double> lower, upper;  ///< the whisker (the 95% interval), when there is one
  std::string value_text;              ///< the direct label after the bar ("4,706.7 ± 3.2")
};

/// Horizontal bars from 0, one row per item in order, with an x axis titled `axis_title`.
std::string svg_bar_chart(const std::vector<BarItem>& items, const std::string& axis_title);

struct StackItem {
  std::string label;
  double first = 0, second = 0;  ///< the two parts, drawn left to right
  std::string value_text;
};

/// Horizontal stacked bars with a legend naming the two parts. `id` is unique in the page (it
/// prefixes the hatch pattern's id).
std::string svg_stacked_bars(const std::vector<StackItem>& items, const std::string& first_name,
                             const std::string& second_name, const std::string& axis_title,
                             const std::string& id);

struct TimeSeries {
  std::string title;                     ///< "GPU utilization (%)": the y axis and its unit
  std::vector<double> t_s;               ///< sample times, seconds since the run started
  std::vector<std::optional<double>> y;  ///< one per time; none breaks the line
  std::optional<double> y_max;           ///< a fixed top of the y axis (100 for a percentage)
  std::optional<std::pair<double, double>> window;  ///< the measured steps, shaded
  double x_max = 0;                                 ///< the x axis reaches at least this far
};

/// Every sample joined by straight lines (no smoothing, so a saw-tooth stays a saw-tooth);
/// the measured window shaded and labelled; a small legend.
std::string svg_time_series(const TimeSeries& series);

}  // namespace orch
