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

}  // namespace

std::string svg_point_chart(const PointChart& c) {
  const bool categorical = !c.x_labels.empty();
  const double width = 520, y0 = 34, x0 = 70, x1 = width - 20;
  // Categorical labels are turned 30 degrees so a sweep's name fits under its point.
  const double y1 = categorical ? 220 : 200, height = y1 + (categorical ? 96 : 48);

  double x_lo = 0, x_hi = 1, y_hi = 0;
  bool first = true;
  for (const auto& p : c.points) {
    if (first) x_lo = x_hi = p.x;
    x_lo = std::min(x_lo, p.x);
    x_hi = std::max(x_hi, p.x);
    first = false;
    y_hi = std::max({y_hi, p.y.value_or(0.0), p.upper.value_or(0.0)});
  }
  AxisTicks tx;
  if (categorical) {
    tx.lo = -0.5;
    tx.hi = static_cast<double>(c.points.size()) - 0.5;
  } else {
    tx = nice_ticks(0, x_hi > 0 ? x_hi : 1, 6);
  }
  const AxisTicks ty = nice_ticks(0, y_hi > 0 ? y_hi : 1, 5);
  auto px = [&](double x) { return x0 + (x - tx.lo) / (tx.hi - tx.lo) * (x1 - x0); };
  auto py = [&](double y) { return y1 - (y - ty.lo) / (ty.hi - ty.lo) * (y1 - y0); };

  std::string out = fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
      "aria-label=\"{2}\">",
      svg_num(width), svg_num(height), html_escape(c.aria));
  out += fmt::format("<text class=\"axis-title\" x=\"{}\" y=\"14\">{}</text>", svg_num(x0 - 60),
                     html_escape(c.y_title));
  // Legend, top right: the line, then the special marks that occur.
  std::string legend;
  double lx = x1 - 250;
  legend += fmt::format(
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
  out += "<g class=\"legend\">" + legend + "</g>";

  // Axes and grid.
  out += "<g class=\"axis\">";
  for (double v : ty.values) {
    out += fmt::format("<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"{3}\"/>",
                       svg_num(x0), svg_num(x1), svg_num(py(v)), kGrid);
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>",
        svg_num(x0 - 6), svg_num(py(v)), html_escape(format_grouped(v, ty.decimals)));
  }
  out += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>"
      "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" stroke=\"#333\"/>",
      svg_num(x0), svg_num(y0), svg_num(y1), svg_num(x1));
  if (categorical) {
    for (std::size_t k = 0; k < c.x_labels.size(); ++k) {
      const double x = px(static_cast<double>(k));
      const std::string shown = shorten(c.x_labels[k], kMaxTickChars);
      out += fmt::format(
          "<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\" transform=\"rotate(-30 {0} {1})\">{2}{3}"
          "</text>",
          svg_num(x), svg_num(y1 + 14),
          shown != c.x_labels[k] ? "<title>" + html_escape(c.x_labels[k]) + "</title>" : "",
          html_escape(shown));
    }
  } else {
    for (double v : tx.values) {
      out += fmt::format(
          "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>"
          "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
          svg_num(px(v)), svg_num(y1), svg_num(y1 + 4), svg_num(y1 + 16),
          html_escape(format_grouped(v, tx.decimals)));
    }
  }
  out += fmt::format(
      "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text></g>",
      svg_num((x0 + x1) / 2), svg_num(height - 8), html_escape(c.x_title));

  // The line through the measured points, then the marks over it.
  std::string pts;
  for (const auto& p : c.points) {
    if (!p.y) continue;
    pts += (pts.empty() ? "" : " ") + svg_num(px(p.x)) + "," + svg_num(py(*p.y));
  }
  if (!pts.empty()) {
    out += fmt::format(
        "<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"1.5\" stroke-linejoin=\"round\"/>",
        pts, kDark);
  }
  for (const auto& p : c.points) {
    const double x = px(p.x);
    const std::string title = "<title>" + html_escape(p.note) + "</title>";
    if (!p.y) {
      out += fmt::format(
          "<path class=\"cross\" d=\"M{0} {1} l8 8 M{0} {2} l8 -8\" stroke=\"{3}\" "
          "stroke-width=\"2\">{4}</path>",
          svg_num(x - 4), svg_num(y1 - 12), svg_num(y1 - 4), kCross, title);
      continue;
    }
    if (p.lower && p.upper) {
      out += fmt::format(
          "<g class=\"whisker\" stroke=\"#000\" stroke-width=\"1.2\"><line x1=\"{0}\" y1=\"{1}\" "
          "x2=\"{0}\" y2=\"{2}\"/><line x1=\"{3}\" y1=\"{1}\" x2=\"{4}\" y2=\"{1}\"/>"
          "<line x1=\"{3}\" y1=\"{2}\" x2=\"{4}\" y2=\"{2}\"/></g>",
          svg_num(x), svg_num(py(std::max(ty.lo, *p.lower))), svg_num(py(*p.upper)), svg_num(x - 4),
          svg_num(x + 4));
    }
    out += fmt::format(
        "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\">{}"
        "</circle>",
        svg_num(x), svg_num(py(*p.y)), kDark, title);
    if (p.highlight) {
      out += fmt::format(
          "<circle class=\"highlight\" cx=\"{}\" cy=\"{}\" r=\"8\" fill=\"none\" stroke=\"{}\" "
          "stroke-width=\"2\"/>",
          svg_num(x), svg_num(py(*p.y)), kDark);
    }
  }
  return out + "</svg>";
}

}  // namespace orch
