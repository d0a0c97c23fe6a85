// SVG drawing for the report's charts (see svg_charts.h).
#include "report/svg_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/html_escape.h"
#include "report/svg_axis.h"

namespace orch {
namespace {

// Colours: dark and light parts differ by ~50 points of lightness, so they stay apart in grey.
constexpr const char* kBarFill = "#4a78a8";
constexpr const char* kDark = "#1f3b5c";
constexpr const char* kLight = "#f0b37e";
constexpr const char* kLightStroke = "#8a4b14";
constexpr const char* kGrid = "#d9d9d9";
constexpr const char* kWindow = "#e4e4e4";
constexpr double kCharWidth = 6.8;  // of a 12px sans-serif character, on average
constexpr std::size_t kMaxLabelChars = 44;

double label_width(const std::vector<std::string>& labels) {
  std::size_t chars = 4;
  for (const auto& l : labels)
    chars = std::max(chars, std::min(kMaxLabelChars, shorten(l, kMaxLabelChars).size()));
  return chars * kCharWidth + 14;
}

// Text shortened to fit, with the whole text as a tooltip when it was cut.
std::string label_text(const std::string& label, double x, double y, const char* anchor) {
  const std::string shown = shorten(label, kMaxLabelChars);
  std::string out =
      fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" dominant-baseline=\"middle\">",
                  svg_num(x), svg_num(y), anchor);
  if (shown != label) out += "<title>" + html_escape(label) + "</title>";
  return out + html_escape(shown) + "</text>";
}

std::string open_svg(double width, double height, const std::string& aria) {
  return fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" "
      "height=\"{}\" role=\"img\" aria-label=\"{}\">",
      svg_num(width), svg_num(height), svg_num(width), svg_num(height), html_escape(aria));
}

// Vertical grid lines and tick labels of an x axis from x0 to x1 (pixels), with its title.
std::string x_axis(const AxisTicks& t, double x0, double x1, double y_top, double y_axis,
                   const std::string& title) {
  auto px = [&](double v) { return x0 + (v - t.lo) / (t.hi - t.lo) * (x1 - x0); };
  std::string out = "<g class=\"axis\">";
  for (double v : t.values) {
    const double x = px(v);
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{3}\"/>",
                       svg_num(x), svg_num(y_top), svg_num(y_axis), kGrid);
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/>",
                       svg_num(x), svg_num(y_axis), svg_num(y_axis + 4));
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>", svg_num(x),
                       svg_num(y_axis + 16), html_escape(format_grouped(v, t.decimals)));
  }
  out += fmt::format("<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"#333\"/>",
                     svg_num(x0), svg_num(x1), svg_num(y_axis));
  out +=
      fmt::format("<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                  svg_num((x0 + x1) / 2), svg_num(y_axis + 34), html_escape(title));
  return out + "</g>";
}

}  // namespace

namespace {

// The frame both horizontal bar charts share: one row per configuration, labels on the left,
// value texts on the right, a value axis from 0 to `top` below the rows.
struct BarFrame {
  double row = 26, plot_top = 0, plot_bottom = 0, width = 0, height = 0, x0 = 0, x1 = 0;
  AxisTicks ticks;
  double px(double v) const { return x0 + (v - ticks.lo) / (ticks.hi - ticks.lo) * (x1 - x0); }
};

BarFrame bar_frame(const std::vector<std::string>& labels, std::size_t value_chars, double top,
                   double plot_top) {
  BarFrame f;
  const double left = label_width(labels), right = value_chars * kCharWidth + 16;
  f.width = std::max(960.0, left + 560 + right);
  f.plot_top = plot_top;
  f.plot_bottom = plot_top + f.row * static_cast<double>(std::max<std::size_t>(1, labels.size()));
  f.height = f.plot_bottom + 44;
  f.ticks = nice_ticks(0, top > 0 ? top : 1);
  f.x0 = left;
  f.x1 = f.width - right;
  return f;
}

}  // namespace

std::string svg_bar_chart(const std::vector<BarItem>& items, const std::string& axis_title) {
  std::vector<std::string> labels;
  std::size_t value_chars = 4;
  double top = 0;
  for (const auto& i : items) {
    labels.push_back(i.label);
    value_chars = std::max(value_chars, i.value_text.size());
    top = std::max({top, i.value, i.upper.value_or(0.0)});
  }
  const BarFrame f = bar_frame(labels, value_chars, top, 8);
  const double row = f.row, plot_top = f.plot_top, plot_bottom = f.plot_bottom;
  const double width = f.width, height = f.height, x0 = f.x0, x1 = f.x1;
  const AxisTicks& t = f.ticks;
  auto px = [&](double v) { return f.px(v); };

  std::string out = open_svg(width, height, axis_title + " per configuration");
  out += x_axis(t, x0, x1, plot_top, plot_bottom, axis_title);
  for (std::size_t k = 0; k < items.size(); ++k) {
    const BarItem& i = items[k];
    const double yc = plot_top + row * (k + 0.5);
    out += label_text(i.label, x0 - 8, yc, "end");
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>",
        svg_num(x0), svg_num(yc - row * 0.32), svg_num(std::max(0.0, px(i.value) - x0)),
        svg_num(row * 0.64), kBarFill, html_escape(i.label + ": " + i.value_text));
    double end = px(i.value);
    if (i.lower && i.upper) {
      const double a = px(std::max(t.lo, *i.lower)), b = px(*i.upper);
      out += fmt::format(
          "<g class=\"whisker\" stroke=\"#000\" stroke-width=\"1.5\"><line x1=\"{0}\" y1=\"{2}\" "
          "x2=\"{1}\" "
          "y2=\"{2}\"/><line x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{4}\"/><line x1=\"{1}\" "
          "y1=\"{3}\" "
          "x2=\"{1}\" y2=\"{4}\"/></g>",
          svg_num(a), svg_num(b), svg_num(yc), svg_num(yc - 6), svg_num(yc + 6));
      end = std::max(end, b);
    }
    out += fmt::format("<text x=\"{}\" y=\"{}\" dominant-baseline=\"middle\">{}</text>",
                       svg_num(end + 6), svg_num(yc), html_escape(i.value_text));
  }
  return out + "</svg>";
}

std::string svg_stacked_bars(const std::vector<StackItem>& items, const std::string& first_name,
                             const std::string& second_name, const std::string& axis_title,
                             const std::string& id) {
  std::vector<std::string> labels;
  std::size_t value_chars = 4;
  double top = 0;
  for (const auto& i : items) {
    labels.push_back(i.label);
    value_chars = std::max(value_chars, i.value_text.size());
    top = std::max(top, i.first + i.second);
  }
  const BarFrame f = bar_frame(labels, value_chars, top, 30);
  const double row = f.row, plot_top = f.plot_top, plot_bottom = f.plot_bottom;
  const double width = f.width, height = f.height, x0 = f.x0, x1 = f.x1;
  const AxisTicks& t = f.ticks;
  auto px = [&](double v) { return f.px(v); };
  const std::string pattern = html_escape(id + "-hatch");

  std::string out = open_svg(width, height, axis_title + ": " + first_name + " and " + second_name);
  out += fmt::format(
      "<defs><pattern id=\"{0}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"{1}\"/><line x1=\"0\" "
      "y1=\"0\" "
      "x2=\"0\" y2=\"6\" stroke=\"{2}\" stroke-width=\"2\"/></pattern></defs>",
      pattern, kLight, kLightStroke);
  // The legend, above the plot.
  out += fmt::format(
      "<g class=\"legend\"><rect x=\"{0}\" y=\"6\" width=\"14\" height=\"14\" fill=\"url(#{1})\" "
      "stroke=\"{2}\"/>"
      "<text x=\"{3}\" y=\"13\" dominant-baseline=\"middle\">{4}</text>",
      svg_num(x0), pattern, kLightStroke, svg_num(x0 + 20), html_escape(first_name));
  const double second_x = x0 + 20 + shorten(first_name, 60).size() * kCharWidth + 24;
  out += fmt::format(
      "<rect x=\"{0}\" y=\"6\" width=\"14\" height=\"14\" fill=\"{1}\"/><text x=\"{2}\" y=\"13\" "
      "dominant-baseline=\"middle\">{3}</text></g>",
      svg_num(second_x), kDark, svg_num(second_x + 20), html_escape(second_name));
  out += x_axis(t, x0, x1, plot_top, plot_bottom, axis_title);
  for (std::size_t k = 0; k < items.size(); ++k) {
    const StackItem& i = items[k];
    const double yc = plot_top + row * (k + 0.5), h = row * 0.64, y = yc - h / 2;
    out += label_text(i.label, x0 - 8, yc, "end");
    const double a = px(std::max(0.0, i.first)),
                 b = px(std::max(0.0, i.first) + std::max(0.0, i.second));
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"url(#{})\" stroke=\"{}\" "
        "stroke-width=\"0.5\">"
        "<title>{}</title></rect>",
        svg_num(x0), svg_num(y), svg_num(a - x0), svg_num(h), pattern, kLightStroke,
        html_escape(i.label + ": " + first_name + " " + format_grouped(i.first, 2)));
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>",
        svg_num(a), svg_num(y), svg_num(b - a), svg_num(h), kDark,
        html_escape(i.label + ": " + second_name + " " + format_grouped(i.second, 2)));
    out += fmt::format("<text x=\"{}\" y=\"{}\" dominant-baseline=\"middle\">{}</text>",
                       svg_num(b + 6), svg_num(yc), html_escape(i.value_text));
  }
  return out + "</svg>";
}

namespace {

// The frame of a time series: seconds since the run started along x, the sampled value up y.
struct SeriesFrame {
  double width = 440, height = 210, x0 = 54, x1 = 426, y0 = 30, y1 = 166;
  AxisTicks tx, ty;
  double px(double t) const { return x0 + (t - tx.lo) / (tx.hi - tx.lo) * (x1 - x0); }
  double py(double v) const { return y1 - (v - ty.lo) / (ty.hi - ty.lo) * (y1 - y0); }
};

// The x axis reaches the last sample and the end of the measured window; the y axis a fixed
// top when the series has one (100 for a percentage), else the largest sample.
SeriesFrame series_frame(const TimeSeries& s) {
  SeriesFrame f;
  double t_max = s.x_max, v_max = 0;
  for (double t : s.t_s) t_max = std::max(t_max, t);
  if (s.window) t_max = std::max(t_max, s.window->second);
  for (const auto& v : s.y) {
    if (v) v_max = std::max(v_max, *v);
  }
  f.tx = nice_ticks(0, t_max > 0 ? t_max : 1, 6);
  f.ty = nice_ticks(0, s.y_max ? *s.y_max : (v_max > 0 ? v_max : 1), 4);
  return f;
}

std::string series_legend(const SeriesFrame& f) {
  return fmt::format(
      "<g class=\"legend\"><line x1=\"{0}\" y1=\"10\" x2=\"{1}\" y2=\"10\" stroke=\"{2}\" "
      "stroke-width=\"1.5\"/>"
      "<text x=\"{3}\" y=\"10\" dominant-baseline=\"middle\">sample</text><rect x=\"{4}\" y=\"4\" "
      "width=\"12\" "
      "height=\"12\" fill=\"{5}\" stroke=\"#777\" stroke-dasharray=\"3 2\"/><text x=\"{6}\" "
      "y=\"10\" "
      "dominant-baseline=\"middle\">measured steps</text></g>",
      svg_num(f.x1 - 190), svg_num(f.x1 - 172), kDark, svg_num(f.x1 - 167), svg_num(f.x1 - 112),
      kWindow, svg_num(f.x1 - 96));
}

// The measured steps, shaded; clipped to the axis, and at least a pixel wide so that a short
// window still shows.
std::string measured_window(const std::pair<double, double>& window, const SeriesFrame& f) {
  const double a = f.px(std::max(f.tx.lo, window.first)),
               b = f.px(std::min(f.tx.hi, window.second));
  return fmt::format(
      "<rect class=\"window\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
      "stroke=\"#777\" "
      "stroke-dasharray=\"3 2\"><title>measured steps: {} s to {} s</title></rect>",
      svg_num(a), svg_num(f.y0), svg_num(std::max(1.0, b - a)), svg_num(f.y1 - f.y0), kWindow,
      format_grouped(window.first, 2), format_grouped(window.second, 2));
}

// Horizontal grid lines and tick labels, then the axis line. Ticks that need more than three
// decimals are written in two significant digits instead.
std::string series_y_axis(const SeriesFrame& f) {
  std::string out = "<g class=\"axis\">";
  for (double v : f.ty.values) {
    out += fmt::format("<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"{3}\"/>",
                       svg_num(f.x0), svg_num(f.x1), svg_num(f.py(v)), kGrid);
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>",
        svg_num(f.x0 - 6), svg_num(f.py(v)),
        html_escape(f.ty.decimals > 3 ? fmt::format("{:.2g}", v)
                                      : format_grouped(v, f.ty.decimals)));
  }
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#333\"/></g>",
                     svg_num(f.x0), svg_num(f.y0), svg_num(f.y1));
  return out;
}

// One stretch of samples without a gap, in pixels: a lone sample is a dot, since a line of
// one point would not show.
std::string sample_stretch(const std::vector<std::pair<double, double>>& stretch) {
  if (stretch.empty()) return "";
  if (stretch.size() == 1) {
    return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2\" fill=\"{}\"/>",
                       svg_num(stretch[0].first), svg_num(stretch[0].second), kDark);
  }
  std::string pts;
  for (const auto& [x, y] : stretch)
    pts += (pts.empty() ? "" : " ") + svg_num(x) + "," + svg_num(y);
  return fmt::format(
      "<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
      "stroke-width=\"1.5\" stroke-linejoin=\"round\"/>",
      pts, kDark);
}

// The samples, one stretch per run of known values: a missing value breaks the line rather
// than being drawn across. A value above the axis's top is drawn at the top.
std::string sample_lines(const TimeSeries& s, const SeriesFrame& f) {
  std::string out;
  std::vector<std::pair<double, double>> stretch;
  for (std::size_t k = 0; k < s.t_s.size() && k < s.y.size(); ++k) {
    if (!s.y[k]) {
      out += sample_stretch(stretch);
      stretch.clear();
      continue;
    }
    stretch.emplace_back(f.px(s.t_s[k]), f.py(std::min(f.ty.hi, *s.y[k])));
  }
  return out + sample_stretch(stretch);
}

}  // namespace

std::string svg_time_series(const TimeSeries& s) {
  const SeriesFrame f = series_frame(s);
  std::string out = open_svg(f.width, f.height, s.title + " over time");
  // The y label and the legend share the top line.
  out += fmt::format("<text class=\"axis-title\" x=\"{}\" y=\"14\">{}</text>", svg_num(f.x0 - 46),
                     html_escape(s.title));
  out += series_legend(f);
  if (s.window) out += measured_window(*s.window, f);
  out += series_y_axis(f);
  out += x_axis(f.tx, f.x0, f.x1, f.y0, f.y1, "time since the run started (s)");
  out += sample_lines(s, f);
  if (s.t_s.empty()) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no samples</text>",
                       svg_num((f.x0 + f.x1) / 2), svg_num((f.y0 + f.y1) / 2));
  }
  return out + "</svg>";
}

}  // namespace orch
