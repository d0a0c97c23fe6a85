// SVG drawing of a point chart (see svg_point_chart.h).
#include "report/svg_point_chart.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/html_escape.h"
#include "report/svg_axis.h"

namespace orch {
namespace {

constexpr const char* kDark = "#1f3b5c";
constexpr const char* kGrid = "#d9d9d9";
constexpr const char* kCross = "#a33";
constexpr std::size_t kMaxTickChars = 18;

// Where the plot lies in the picture, and the scales that put a point in it.
struct PointFrame {
  bool categorical = false;
  double width = 520, y0 = 34, x0 = 70, x1 = 500, y1 = 200, height = 248;
  AxisTicks tx, ty;
  double px(double x) const { return x0 + (x - tx.lo) / (tx.hi - tx.lo) * (x1 - x0); }
  double py(double y) const { return y1 - (y - ty.lo) / (ty.hi - ty.lo) * (y1 - y0); }
};

PointFrame point_frame(const PointChart& c) {
  PointFrame f;
  f.categorical = !c.x_labels.empty();
  // Categorical labels are turned 30 degrees so a sweep's name fits under its point.
  f.y1 = f.categorical ? 220 : 200;
  f.height = f.y1 + (f.categorical ? 96 : 48);
  double x_hi = 1, y_hi = 0;
  for (std::size_t k = 0; k < c.points.size(); ++k) {
    const ChartPoint& p = c.points[k];
    x_hi = k == 0 ? p.x : std::max(x_hi, p.x);
    y_hi = std::max({y_hi, p.y.value_or(0.0), p.upper.value_or(0.0)});
  }
  if (f.categorical) {
    // One slot per point, with half a slot of margin either side.
    f.tx.lo = -0.5;
    f.tx.hi = static_cast<double>(c.points.size()) - 0.5;
  } else {
    f.tx = nice_ticks(0, x_hi > 0 ? x_hi : 1, 6);
  }
  f.ty = nice_ticks(0, y_hi > 0 ? y_hi : 1, 5);
  return f;
}

// Top right: the line, then only the special marks that occur in this chart.
std::string point_legend(const PointChart& c, const PointFrame& f) {
  double lx = f.x1 - 250;
  std::string legend = fmt::format(
      "<circle cx=\"{}\" cy=\"10\" r=\"3\" fill=\"{}\"/><text x=\"{}\" y=\"10\" "
      "dominant-baseline=\"middle\">measured</text>",
      svg_num(lx), kDark, svg_num(lx + 7));
  lx += 72;
  const bool any_highlight = std::any_of(c.points.begin(), c.points.end(),
                                         [](const ChartPoint& p) { return p.highlight; });
  const bool any_cross =
      std::any_of(c.points.begin(), c.points.end(), [](const ChartPoint& p) { return !p.y; });
  if (any_highlight && !c.highlight_name.empty()) {
    legend += fmt::format(
        "<circle cx=\"{}\" cy=\"10\" r=\"6\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>"
        "<text x=\"{}\" y=\"10\" dominant-baseline=\"middle\">{}</text>",
        svg_num(lx), kDark, svg_num(lx + 9), html_escape(c.highlight_name));
    lx += 20 + 6.8 * static_cast<double>(c.highlight_name.size());
  }
  if (any_cross && !c.cross_name.empty()) {
    legend += fmt::format(
        "<path d=\"M{0} 6 l8 8 M{0} 14 l8 -8\" stroke=\"{1}\" stroke-width=\"2\"/>"
        "<text x=\"{2}\" y=\"10\" dominant-baseline=\"middle\">{3}</text>",
        svg_num(lx - 4), kCross, svg_num(lx + 8), html_escape(c.cross_name));
  }
  return "<g class=\"legend\">" + legend + "</g>";
}

// Horizontal grid lines with the y tick labels, then both axis lines.
std::string y_grid(const PointFrame& f) {
  std::string out;
  for (double v : f.ty.values) {
    out += fmt::format("<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"{3}\"/>",
                       svg_num(f.x0), svg_num(f.x1), svg_num(f.py(v)), kGrid);
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>",
        svg_num(f.x0 - 6), svg_num(f.py(v)), html_escape(format_grouped(v, f.ty.decimals)));
  }
  out += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>"
      "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" stroke=\"#333\"/>",
      svg_num(f.x0), svg_num(f.y0), svg_num(f.y1), svg_num(f.x1));
  return out;
}

// One label under each point; a label cut short keeps its whole text as a tooltip.
std::string category_ticks(const PointChart& c, const PointFrame& f) {
  std::string out;
  for (std::size_t k = 0; k < c.x_labels.size(); ++k) {
    const double x = f.px(static_cast<double>(k));
    const std::string shown = shorten(c.x_labels[k], kMaxTickChars);
    out += fmt::format(
        "<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\" transform=\"rotate(-30 {0} {1})\">{2}{3}"
        "</text>",
        svg_num(x), svg_num(f.y1 + 14),
        shown != c.x_labels[k] ? "<title>" + html_escape(c.x_labels[k]) + "</title>" : "",
        html_escape(shown));
  }
  return out;
}

std::string numeric_ticks(const PointFrame& f) {
  std::string out;
  for (double v : f.tx.values) {
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>"
        "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
        svg_num(f.px(v)), svg_num(f.y1), svg_num(f.y1 + 4), svg_num(f.y1 + 16),
        html_escape(format_grouped(v, f.tx.decimals)));
  }
  return out;
}

std::string point_axes(const PointChart& c, const PointFrame& f) {
  std::string out = "<g class=\"axis\">" + y_grid(f);
  out += f.categorical ? category_ticks(c, f) : numeric_ticks(f);
  out += fmt::format(
      "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text></g>",
      svg_num((f.x0 + f.x1) / 2), svg_num(f.height - 8), html_escape(c.x_title));
  return out;
}

// One line through every measured point: a point that did not qualify does not break it.
std::string measured_line(const PointChart& c, const PointFrame& f) {
  std::string pts;
  for (const auto& p : c.points) {
    if (!p.y) continue;
    pts += (pts.empty() ? "" : " ") + svg_num(f.px(p.x)) + "," + svg_num(f.py(*p.y));
  }
  if (pts.empty()) return "";
  return fmt::format(
      "<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
      "stroke-width=\"1.5\" stroke-linejoin=\"round\"/>",
      pts, kDark);
}

// The interval's lower end is clamped to the axis, which starts at 0.
std::string whisker(const ChartPoint& p, const PointFrame& f) {
  const double x = f.px(p.x);
  return fmt::format(
      "<g class=\"whisker\" stroke=\"#000\" stroke-width=\"1.2\"><line x1=\"{0}\" y1=\"{1}\" "
      "x2=\"{0}\" y2=\"{2}\"/><line x1=\"{3}\" y1=\"{1}\" x2=\"{4}\" y2=\"{1}\"/>"
      "<line x1=\"{3}\" y1=\"{2}\" x2=\"{4}\" y2=\"{2}\"/></g>",
      svg_num(x), svg_num(f.py(std::max(f.ty.lo, *p.lower))), svg_num(f.py(*p.upper)),
      svg_num(x - 4), svg_num(x + 4));
}

// A point without a value is a cross on the floor; the others a dot, with their whisker under
// it and a ring over it when highlighted.
std::string point_mark(const ChartPoint& p, const PointFrame& f) {
  const double x = f.px(p.x);
  const std::string title = "<title>" + html_escape(p.note) + "</title>";
  if (!p.y) {
    return fmt::format(
        "<path class=\"cross\" d=\"M{0} {1} l8 8 M{0} {2} l8 -8\" stroke=\"{3}\" "
        "stroke-width=\"2\">{4}</path>",
        svg_num(x - 4), svg_num(f.y1 - 12), svg_num(f.y1 - 4), kCross, title);
  }
  std::string out = p.lower && p.upper ? whisker(p, f) : "";
  out += fmt::format(
      "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\">{}"
      "</circle>",
      svg_num(x), svg_num(f.py(*p.y)), kDark, title);
  if (p.highlight) {
    out += fmt::format(
        "<circle class=\"highlight\" cx=\"{}\" cy=\"{}\" r=\"8\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"2\"/>",
        svg_num(x), svg_num(f.py(*p.y)), kDark);
  }
  return out;
}

}  // namespace

std::string svg_point_chart(const PointChart& c) {
  const PointFrame f = point_frame(c);
  std::string out = fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
      "aria-label=\"{2}\">",
      svg_num(f.width), svg_num(f.height), html_escape(c.aria));
  out += fmt::format("<text class=\"axis-title\" x=\"{}\" y=\"14\">{}</text>", svg_num(f.x0 - 60),
                     html_escape(c.y_title));
  out += point_legend(c, f);
  out += point_axes(c, f);
  // The line first, so that the marks are drawn over it.
  out += measured_line(c, f);
  for (const auto& p : c.points) out += point_mark(p, f);
  return out + "</svg>";
}

}  // namespace orch
