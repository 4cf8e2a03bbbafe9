#include "train/curve_plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

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

TEST(CurvePlot, HandlesFlatAndEmptySeries) {
  const std::string svg =
      render_curves_svg("t", {{"flat", {{"a", "black", {{1, 0.5}}}}}, {"empty", {}}});
  EXPECT_NE(svg.find("<circle"), std::string::npos);  // a single point is still visible
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

}  // namespace sft
