#include "train/step_plan.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace sft {

namespace {

// Trainer: an interval below 1 is a fraction of the run, rounded up.
int64_t resolve_interval(double value, int64_t max_steps) {
  if (value < 1)
    return std::max<int64_t>(
        1, static_cast<int64_t>(std::ceil(static_cast<double>(max_steps) * value)));
  return static_cast<int64_t>(value);
}

}  // namespace

StepPlan plan_steps(const StepPlanInput& in) {
  if (in.micro_batches_per_epoch <= 0) {
    fail("train",
         "the training set yields no batch (hint: check --dataset_name, the split, and that rows "
         "survive "
         "preparation; `sft prepare --report` shows what was dropped)");
  }
  const int64_t gas = in.gradient_accumulation_steps;
  StepPlan plan;
  plan.updates_per_epoch = std::max<int64_t>(
      in.micro_batches_per_epoch / gas + (in.micro_batches_per_epoch % gas > 0 ? 1 : 0), 1);
  if (in.max_steps > 0) {
    plan.max_steps = in.max_steps;
    plan.num_epochs =
        in.max_steps / plan.updates_per_epoch + (in.max_steps % plan.updates_per_epoch > 0 ? 1 : 0);
  } else {
    plan.max_steps = static_cast<int64_t>(
        std::ceil(in.num_train_epochs * static_cast<double>(plan.updates_per_epoch)));
    plan.num_epochs = static_cast<int64_t>(std::ceil(in.num_train_epochs));
  }
  plan.logging_steps = resolve_interval(in.logging_steps, plan.max_steps);
  plan.save_steps = resolve_interval(in.save_steps, plan.max_steps);
  plan.eval_steps = resolve_interval(in.eval_steps.value_or(in.logging_steps), plan.max_steps);
  return plan;
}

MicroBatchRange micro_batches_of_update(const StepPlanInput& in, int64_t update_in_epoch) {
  const int64_t begin = update_in_epoch * in.gradient_accumulation_steps;
  return {begin, std::min(begin + in.gradient_accumulation_steps, in.micro_batches_per_epoch)};
}

double epoch_progress(int64_t epoch, int64_t micro_batch, int64_t micro_batches_per_epoch) {
  return static_cast<double>(epoch) +
         static_cast<double>(micro_batch + 1) / static_cast<double>(micro_batches_per_epoch);
}

}  // namespace sft
