// A vertical-axis chart of points joined by a line, for the report's two curves: the probes of a
// `batch_size: auto` search (images per second against the batch size, the chosen batch ringed,
// batches that did not qualify marked on the floor), and one configuration's throughput across
// sweeps (one point per sweep, in order, with its 95% interval as a whisker). Labels are escaped
// with html_escape; the marks differ in shape, not only in colour, so the chart reads in grey.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace orch {

struct ChartPoint {
  double x = 0;                        ///< on a numeric x axis; the position on a categorical one
  std::optional<double> y;             ///< none: drawn as a cross on the x axis (did not qualify)
  std::optional<double> lower, upper;  ///< a whisker, when there is an interval
  bool highlight = false;              ///< ringed and named in the legend (the chosen batch)
  std::string note;                    ///< the point's tooltip (raw, escaped when drawn)
};

struct PointChart {
  std::string aria;                   ///< what the chart shows, for screen readers
  std::string x_title, y_title;       ///< axis titles
  std::vector<ChartPoint> points;     ///< in x order; joined by a line where y is known
  std::vector<std::string> x_labels;  ///< non-empty: a categorical x axis, one label per point
  std::string highlight_name;         ///< the legend's name for a highlighted point
  std::string cross_name;             ///< the legend's name for a cross
};

std::string svg_point_chart(const PointChart& chart);

}  // namespace orch
