#include "train/curve_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "test_paths.h"

namespace sft {

TEST(CurvePlot, RendersPanelsWithTicksAndLegends) {
  CurveSeries loss{"train loss", "#1f77b4", {}};
  CurveSeries lr{"learning rate", "#d62728", {}};
  for (int step = 1; step <= 60; ++step) {
    loss.points.push_back({step, 2.5 * std::exp(-step / 20.0) + 0.3});
    lr.points.push_back({step, step < 6 ? 2e-5 * step / 6 : 2e-5 * (60 - step) / 54.0});
  }
  loss.points.push_back({61, std::nan("")});  // skipped, not drawn
  const std::string svg =
      render_curves_svg("Qwen3 <tiny> SFT", {{"loss", {loss}}, {"learning rate", {lr}}});
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"960\"", 0), 0u);
  EXPECT_NE(svg.find("Qwen3 &lt;tiny&gt; SFT"), std::string::npos);  // escaped
  EXPECT_NE(svg.find(">2e-05<"), std::string::npos)
      << "small learning rates keep their ticks apart";
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 20, true);
  std::ofstream(test::fresh_output_dir("curve_plot") + "/curves.svg") << svg;  // to look at
}

// The step axis ends at or just past the last step: 6400 steps tick to 7000 by 1000, not to
// 8000 (a fifth of the panel empty); 60 steps to 60.
TEST(CurvePlot, StepAxisEndsJustPastTheLastStep) {
  auto x_ticks = [](int steps) {
    CurveSeries loss{"train loss", "black", {}};
    for (int step = 1; step <= steps; step += std::max(1, steps / 100))
      loss.points.push_back({step, 1.0 / step});
    loss.points.push_back({steps, 1.0 / steps});
    const std::string svg = render_curves_svg("t", {{"loss", {loss}}});
    // The step axis's labels sit 16 px below the plot, centred on their tick.
    std::vector<std::string> ticks;
    const std::string mark = "text-anchor=\"middle\" font-size=\"11\">";
    for (size_t at = svg.find(mark); at != std::string::npos; at = svg.find(mark, at + 1))
      ticks.push_back(svg.substr(at + mark.size(), svg.find('<', at) - at - mark.size()));
    return ticks;
  };
  EXPECT_EQ(x_ticks(6400), (std::vector<std::string>{"0", "1000", "2000", "3000", "4000", "5000",
                                                     "6000", "7000"}));
  EXPECT_EQ(x_ticks(60), (std::vector<std::string>{"0", "10", "20", "30", "40", "50", "60"}));
  const auto ticks = x_ticks(4);
  EXPECT_EQ(ticks.back(), "4");
}

TEST(CurvePlot, HandlesFlatAndEmptySeries) {
  const std::string svg =
      render_curves_svg("t", {{"flat", {{"a", "black", {{1, 0.5}}}}}, {"empty", {}}});
  EXPECT_NE(svg.find("<circle"), std::string::npos);  // a single point is still visible
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

}  // namespace sft
