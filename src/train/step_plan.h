// How many optimizer steps a run takes, and when it logs, evaluates and saves — the
// accounting of transformers' Trainer (set_initial_training_values), so step counts,
// epochs and schedules line up with a TRL run on the same data.
#pragma once

#include <cstdint>
#include <optional>

namespace sft {

struct StepPlanInput {
  int64_t micro_batches_per_epoch = 0;  // len(train dataloader) on this rank
  int64_t gradient_accumulation_steps = 1;
  int64_t max_steps = -1;  // > 0 overrides epochs
  double num_train_epochs = 3.0;
  double logging_steps = 10;  // >= 1 a count, < 1 a fraction of max_steps
  double save_steps = 500;
  std::optional<double> eval_steps;  // default: logging_steps
};

struct StepPlan {
  int64_t updates_per_epoch = 0;  // the last update of an epoch may use fewer micro-batches
  int64_t max_steps = 0;
  int64_t num_epochs = 0;  // epochs the data loader goes through (the last may stop early)
  int64_t logging_steps = 0;
  int64_t save_steps = 0;
  int64_t eval_steps = 0;
};

StepPlan plan_steps(const StepPlanInput& input);

// Micro-batches [begin, end) of update `update_in_epoch` within an epoch.
struct MicroBatchRange {
  int64_t begin = 0;
  int64_t end = 0;
};
MicroBatchRange micro_batches_of_update(const StepPlanInput& input, int64_t update_in_epoch);

// The fractional epoch HF logs after micro-batch `micro_batch` (0-based) of epoch `epoch`.
double epoch_progress(int64_t epoch, int64_t micro_batch, int64_t micro_batches_per_epoch);

}  // namespace sft
