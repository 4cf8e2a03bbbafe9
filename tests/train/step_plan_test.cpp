// Step accounting as transformers' Trainer.set_initial_training_values.
#include "train/step_plan.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace sft {

TEST(StepPlan, EpochBasedRunsRoundUpPartialAccumulation) {
  // 10 micro-batches, GAS 4: updates of 4, 4 and 2 micro-batches → 3 updates per epoch.
  StepPlan plan = plan_steps(
      {.micro_batches_per_epoch = 10, .gradient_accumulation_steps = 4, .num_train_epochs = 2});
  EXPECT_EQ(plan.updates_per_epoch, 3);
  EXPECT_EQ(plan.max_steps, 6);
  EXPECT_EQ(plan.num_epochs, 2);
  StepPlanInput in{.micro_batches_per_epoch = 10, .gradient_accumulation_steps = 4};
  EXPECT_EQ(micro_batches_of_update(in, 2).begin, 8);
  EXPECT_EQ(micro_batches_of_update(in, 2).end, 10);
}

TEST(StepPlan, FractionalEpochsAndMaxSteps) {
  StepPlan half = plan_steps(
      {.micro_batches_per_epoch = 9, .gradient_accumulation_steps = 1, .num_train_epochs = 0.5});
  EXPECT_EQ(half.max_steps, 5);  // ceil(0.5 × 9)
  EXPECT_EQ(half.num_epochs, 1);
  StepPlan capped =
      plan_steps({.micro_batches_per_epoch = 8, .gradient_accumulation_steps = 2, .max_steps = 9});
  EXPECT_EQ(capped.max_steps, 9);
  EXPECT_EQ(capped.num_epochs, 3);  // 4 updates per epoch: 9 steps need a third epoch
}

TEST(StepPlan, IntervalsMayBeFractions) {
  StepPlan plan = plan_steps({.micro_batches_per_epoch = 100,
                              .gradient_accumulation_steps = 1,
                              .num_train_epochs = 1,
                              .logging_steps = 0.1,
                              .save_steps = 0.25,
                              .eval_steps = 7});
  EXPECT_EQ(plan.logging_steps, 10);
  EXPECT_EQ(plan.save_steps, 25);
  EXPECT_EQ(plan.eval_steps, 7);
  EXPECT_EQ(plan_steps({.micro_batches_per_epoch = 5, .logging_steps = 3}).eval_steps,
            3);  // defaults to logging
}

TEST(StepPlan, EpochProgressAsLogged) {
  EXPECT_DOUBLE_EQ(epoch_progress(0, 0, 4), 0.25);
  EXPECT_DOUBLE_EQ(epoch_progress(1, 3, 4), 2.0);
}

TEST(StepPlan, EmptyDataIsAClearError) {
  EXPECT_THROW(plan_steps({.micro_batches_per_epoch = 0}), Error);
}

}  // namespace sft
