#include "train/curve_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "core/html_escape.h"

namespace sft {

namespace {

constexpr double kPanelWidth = 480, kPanelHeight = 320, kTitleHeight = 36;
constexpr double kLeft = 70, kRight = 20, kTop = 30, kBottom = 46;  // margins inside a panel

// "2e-05", "0.5", "1200": short labels that still tell small learning rates apart.
std::string format_tick(double v) {
  char buf[32];
  if (v == 0) return "0";
  const double a = std::fabs(v);
  std::snprintf(buf, sizeof buf, (a < 1e-3 || a >= 1e5) ? "%.3g" : "%.4g", v);
  return buf;
}

// Tick step of 1, 2 or 5 × 10^k giving about `target` intervals over [lo, hi].
double nice_step(double lo, double hi, int target) {
  const double raw = (hi - lo) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

// The step axis's tick step: 1, 2 or 5 × 10^k with 4 to 8 intervals whose last tick overshoots
// the last step least (6400 steps: ticks to 7000 by 1000, not to 8000 by 2000, which left a
// fifth of the panel empty); on a tie, fewer intervals.
double step_axis_tick(double lo, double hi) {
  const double raw = (hi - lo) / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double best = 0, best_overshoot = 0;
  for (double scale : {magnitude * 10, magnitude, magnitude / 10}) {
    for (double m : {5.0, 2.0, 1.0}) {  // largest first: a tie keeps the fewer intervals
      const double tick = m * scale;
      const double first = std::floor(lo / tick), last = std::ceil(hi / tick);
      if (last - first < 4 || last - first > 8) continue;
      const double overshoot = last * tick - hi;
      if (best == 0 || overshoot < best_overshoot - 1e-9 * tick)
        best = tick, best_overshoot = overshoot;
    }
  }
  return best > 0 ? best : nice_step(lo, hi, 5);
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  void settle() {
    if (!std::isfinite(lo)) lo = 0, hi = 1;
    if (hi - lo < 1e-300) {
      const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
      lo -= pad;
      hi += pad;
    }
  }
};

void render_panel(std::ostringstream& svg, const CurvePanel& panel, double x0, double y0) {
  Range xr, yr;
  for (const CurveSeries& s : panel.series) {
    for (auto [x, y] : s.points) {
      if (!std::isfinite(y)) continue;
      xr.add(x);
      yr.add(y);
    }
  }
  xr.settle();
  yr.settle();
  const double x_step = step_axis_tick(xr.lo, xr.hi), y_step = nice_step(yr.lo, yr.hi, 5);
  xr.lo = std::floor(xr.lo / x_step) * x_step, xr.hi = std::ceil(xr.hi / x_step) * x_step;
  yr.lo = std::floor(yr.lo / y_step) * y_step, yr.hi = std::ceil(yr.hi / y_step) * y_step;
  const double w = kPanelWidth - kLeft - kRight, h = kPanelHeight - kTop - kBottom;
  auto px = [&](double x) { return x0 + kLeft + (x - xr.lo) / (xr.hi - xr.lo) * w; };
  auto py = [&](double y) { return y0 + kTop + (1 - (y - yr.lo) / (yr.hi - yr.lo)) * h; };

  svg << "<text x=\"" << x0 + kLeft + w / 2 << "\" y=\"" << y0 + 18
      << "\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">"
      << html_escape(panel.title) << "</text>\n";
  for (double t = yr.lo; t <= yr.hi + y_step / 2; t += y_step) {
    svg << "<line x1=\"" << px(xr.lo) << "\" x2=\"" << px(xr.hi) << "\" y1=\"" << py(t)
        << "\" y2=\"" << py(t) << "\" stroke=\"#e3e3e3\"/>\n<text x=\"" << px(xr.lo) - 6
        << "\" y=\"" << py(t) + 4 << "\" text-anchor=\"end\" font-size=\"11\">" << format_tick(t)
        << "</text>\n";
  }
  for (double t = xr.lo; t <= xr.hi + x_step / 2; t += x_step) {
    svg << "<line x1=\"" << px(t) << "\" x2=\"" << px(t) << "\" y1=\"" << py(yr.lo) << "\" y2=\""
        << py(yr.hi) << "\" stroke=\"#f0f0f0\"/>\n<text x=\"" << px(t) << "\" y=\""
        << py(yr.lo) + 16 << "\" text-anchor=\"middle\" font-size=\"11\">" << format_tick(t)
        << "</text>\n";
  }
  svg << "<rect x=\"" << px(xr.lo) << "\" y=\"" << py(yr.hi) << "\" width=\"" << w << "\" height=\""
      << h << "\" fill=\"none\" stroke=\"#888\"/>\n<text x=\"" << x0 + kLeft + w / 2 << "\" y=\""
      << y0 + kPanelHeight - 8 << "\" text-anchor=\"middle\" font-size=\"12\">step</text>\n";
  double legend_y = y0 + kTop + 14;
  for (const CurveSeries& s : panel.series) {
    svg << "<polyline fill=\"none\" stroke=\"" << html_escape(s.color)
        << "\" stroke-width=\"1.8\" points=\"";
    for (auto [x, y] : s.points) {
      if (std::isfinite(y)) svg << px(x) << "," << py(y) << " ";
    }
    svg << "\"/>\n";
    if (s.points.size() == 1) {
      svg << "<circle cx=\"" << px(s.points[0].first) << "\" cy=\"" << py(s.points[0].second)
          << "\" r=\"3\" fill=\"" << html_escape(s.color) << "\"/>\n";
    }
    svg << "<line x1=\"" << px(xr.hi) - 120 << "\" x2=\"" << px(xr.hi) - 100 << "\" y1=\""
        << legend_y - 4 << "\" y2=\"" << legend_y - 4 << "\" stroke=\"" << html_escape(s.color)
        << "\" stroke-width=\"2\"/>\n<text x=\"" << px(xr.hi) - 95 << "\" y=\"" << legend_y
        << "\" font-size=\"11\">" << html_escape(s.label) << "</text>\n";
    legend_y += 16;
  }
}

}  // namespace

std::string render_curves_svg(const std::string& title, const std::vector<CurvePanel>& panels) {
  const double width = kPanelWidth * static_cast<double>(std::max<size_t>(1, panels.size()));
  const double height = kPanelHeight + kTitleHeight;
  std::ostringstream svg;
  svg.precision(6);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"" << width / 2
      << "\" y=\"24\" text-anchor=\"middle\" font-size=\"17\">" << html_escape(title)
      << "</text>\n";
  for (size_t i = 0; i < panels.size(); ++i)
    render_panel(svg, panels[i], kPanelWidth * static_cast<double>(i), kTitleHeight);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace sft
