// Learning-rate schedules as transformers' get_scheduler builds them.
//
// A schedule maps the optimizer step (0-based: the step about to be taken) to a factor of
// the base learning rate, exactly as the lr_lambda functions of transformers.optimization.
// The Trainer calls scheduler.step() after each optimizer step, so step k uses factor(k).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "io/json.h"

namespace sft {

enum class ScheduleType {
  kLinear,
  kCosine,
  kCosineWithMinLr,
  kConstant,
  kConstantWithWarmup,
  kWarmupStableDecay,
  kInverseSqrt,
};

// "linear", "cosine", ... as TrainingArguments.lr_scheduler_type; throws listing the valid names.
ScheduleType parse_schedule_type(std::string_view name);
std::string_view schedule_type_name(ScheduleType type);

// Warmup steps as TrainingArguments.get_warmup_steps: a value >= 1 is a count, a value in
// [0, 1) a fraction of the training steps (rounded up). `warmup_ratio` (the older flag) is
// used when warmup_steps is 0.
int64_t resolve_warmup_steps(double warmup_steps, double warmup_ratio, int64_t training_steps);

struct ScheduleConfig {
  ScheduleType type = ScheduleType::kLinear;
  int64_t warmup_steps = 0;
  int64_t training_steps = 0;
  // From --lr_scheduler_kwargs, as get_scheduler's scheduler_specific_kwargs:
  double num_cycles = 0.5;             // cosine family
  double min_lr_rate = 0.0;            // cosine_with_min_lr (or min_lr / base lr)
  int64_t num_decay_steps = 0;         // warmup_stable_decay (required)
  int64_t num_stable_steps = -1;       // warmup_stable_decay (-1: training - warmup - decay)
  std::string warmup_type = "linear";  // warmup_stable_decay: linear, cosine, 1-sqrt
  std::string decay_type = "cosine";   // warmup_stable_decay: linear, cosine, 1-sqrt
  double min_lr_ratio = 0.0;           // warmup_stable_decay
  int64_t timescale = 0;               // inverse_sqrt (default: warmup steps, else 10000)
};

// Builds a config from the scheduler type, step counts and the kwargs object
// (e.g. {"min_lr": 1e-6} or {"num_decay_steps": 100}); throws on missing or unknown keys.
ScheduleConfig make_schedule_config(ScheduleType type, int64_t warmup_steps, int64_t training_steps,
                                    double base_lr, const Json& kwargs);

// The factor multiplying the base learning rate at optimizer step `step`.
double schedule_factor(const ScheduleConfig& config, int64_t step);

}  // namespace sft
