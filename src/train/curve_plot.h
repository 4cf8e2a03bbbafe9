// Training curves as a standalone SVG (loss and learning rate against the step), written
// to output_dir at the end of a run and at each save: people would rather look than read.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sft {

struct CurveSeries {
  std::string label;  // legend text, e.g. "train loss"
  std::string color;  // any SVG color
  std::vector<std::pair<double, double>>
      points;  // (step, value), in step order; non-finite values are skipped
};

struct CurvePanel {
  std::string title;  // e.g. "loss"
  std::vector<CurveSeries> series;
};

// Panels side by side, each with its own axes, ticks at 1-2-5 steps, and a legend.
std::string render_curves_svg(const std::string& title, const std::vector<CurvePanel>& panels);

}  // namespace sft
