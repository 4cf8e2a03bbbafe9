// Progress formatting (the clock-driven drawing is not tested: no timing-based tests).
#include "core/progress.h"

#include <gtest/gtest.h>

namespace sft {
namespace {

TEST(Progress, FormatSi) {
  EXPECT_EQ(format_si(0), "0");
  EXPECT_EQ(format_si(999), "999");
  EXPECT_EQ(format_si(2.5), "2.50");
  EXPECT_EQ(format_si(1234), "1.23k");
  EXPECT_EQ(format_si(12345), "12.3k");
  EXPECT_EQ(format_si(999960), "1.00M");
  EXPECT_EQ(format_si(4.56e9), "4.56G");
  EXPECT_EQ(format_si(-1), "?");
}

TEST(Progress, FormatDuration) {
  EXPECT_EQ(format_duration(7.4), "0:07");
  EXPECT_EQ(format_duration(723), "12:03");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(Progress, BarWithEta) {
  ProgressSnapshot s{5000, 10000, 1500000, 4.0};
  EXPECT_EQ(format_progress("preparing", s, 10),
            "preparing [#####.....]  50% 5.00k/10.0k rows, 1.25k rows/s, 375k tok/s, ETA 0:04");
  EXPECT_EQ(format_progress("preparing", s, 0),
            "preparing  50% 5.00k/10.0k rows, 1.25k rows/s, 375k tok/s, ETA 0:04");
}

TEST(Progress, UnknownTotalAndDone) {
  EXPECT_EQ(format_progress("p", {300, 0, 900, 2.0}, 10),
            "p 300 rows, 150 rows/s, 450 tok/s, 0:02");
  EXPECT_EQ(format_progress("p", {10, 10, 20, 1.0}, 4),
            "p [####] 100% 10/10 rows, 10 rows/s, 20 tok/s, 0:01");
  EXPECT_EQ(format_progress("p", {0, 10, 0, 0.0}, 0), "p   0% 0/10 rows");
}

}  // namespace
}  // namespace sft
