// Learning-rate schedules against transformers.get_scheduler (tools/make_optim_goldens.py).
#include "optim/schedule.h"

#include <gtest/gtest.h>

#include "test_paths.h"

namespace sft {

TEST(Schedule, MatchesTransformersGetScheduler) {
  const Json cases =
      read_json_file(test::source_path("tests/fixtures/optim/schedules.json"), "test");
  ASSERT_GE(cases.size(), 10u);
  for (const Json& c : cases) {
    SCOPED_TRACE(c.dump());
    const double base_lr = c["base_lr"];
    ScheduleConfig config =
        make_schedule_config(parse_schedule_type(c["type"].get<std::string>()), c["warmup_steps"],
                             c["training_steps"], base_lr, c["kwargs"]);
    for (size_t step = 0; step < c["lrs"].size(); ++step) {
      const double want = c["lrs"][step];
      EXPECT_NEAR(base_lr * schedule_factor(config, static_cast<int64_t>(step)), want, 1e-15)
          << "step " << step;
    }
  }
}

TEST(Schedule, WarmupStepsFollowTrainingArguments) {
  EXPECT_EQ(resolve_warmup_steps(10, 0, 100), 10);
  EXPECT_EQ(resolve_warmup_steps(0.1, 0, 95), 10);  // fraction of the steps, rounded up
  EXPECT_EQ(resolve_warmup_steps(0, 0.03, 100), 3);
  EXPECT_EQ(resolve_warmup_steps(0, 0, 100), 0);
  EXPECT_THROW(resolve_warmup_steps(-1, 0, 100), Error);
}

TEST(Schedule, ClearErrors) {
  EXPECT_THROW(parse_schedule_type("polynomial_typo"), Error);
  EXPECT_THROW(make_schedule_config(ScheduleType::kCosineWithMinLr, 0, 10, 1e-3, Json::object()),
               Error);
  EXPECT_THROW(make_schedule_config(ScheduleType::kWarmupStableDecay, 0, 10, 1e-3, Json::object()),
               Error);
  EXPECT_THROW(make_schedule_config(ScheduleType::kLinear, 0, 10, 1e-3, Json{{"min_lr_typo", 1}}),
               Error);
}

}  // namespace sft
