#include "optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace sft {

namespace {

constexpr std::string_view kComponent = "schedule";

struct NamedType {
  ScheduleType type;
  std::string_view name;
};
constexpr NamedType kTypes[] = {
    {ScheduleType::kLinear, "linear"},
    {ScheduleType::kCosine, "cosine"},
    {ScheduleType::kCosineWithMinLr, "cosine_with_min_lr"},
    {ScheduleType::kConstant, "constant"},
    {ScheduleType::kConstantWithWarmup, "constant_with_warmup"},
    {ScheduleType::kWarmupStableDecay, "warmup_stable_decay"},
    {ScheduleType::kInverseSqrt, "inverse_sqrt"},
};

double warmup_factor(int64_t step, int64_t warmup) {
  return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));
}

double cosine_factor(double progress, double num_cycles) {
  return 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles * 2.0 * progress));
}

// Warmup/decay shapes of the WSD schedule.
double wsd_shape(const std::string& type, double progress, bool warming_up, double num_cycles) {
  if (type == "linear") return warming_up ? progress : 1.0 - progress;
  if (type == "cosine") {
    return warming_up ? 0.5 * (1.0 - std::cos(std::numbers::pi * progress))
                      : cosine_factor(progress, num_cycles);
  }
  return warming_up ? 1.0 - std::sqrt(1.0 - progress) : 1.0 - std::sqrt(progress);  // "1-sqrt"
}

double number_kwarg(const Json& kwargs, const char* key, double fallback) {
  auto it = kwargs.find(key);
  if (it == kwargs.end() || it->is_null()) return fallback;
  if (!it->is_number())
    fail(kComponent, std::string("lr_scheduler_kwargs.") + key + " must be a number");
  return it->get<double>();
}

std::string shape_kwarg(const Json& kwargs, const char* key, const std::string& fallback) {
  auto it = kwargs.find(key);
  if (it == kwargs.end()) return fallback;
  if (!it->is_string() || (*it != "linear" && *it != "cosine" && *it != "1-sqrt")) {
    fail(kComponent, std::string("lr_scheduler_kwargs.") + key +
                         " must be \"linear\", \"cosine\" or \"1-sqrt\"");
  }
  return it->get<std::string>();
}

}  // namespace

ScheduleType parse_schedule_type(std::string_view name) {
  for (const NamedType& t : kTypes) {
    if (t.name == name) return t.type;
  }
  std::string valid;
  for (const NamedType& t : kTypes) valid += (valid.empty() ? "" : ", ") + std::string(t.name);
  fail(kComponent,
       "unknown lr_scheduler_type '" + std::string(name) + "' (supported: " + valid + ")");
}

std::string_view schedule_type_name(ScheduleType type) {
  for (const NamedType& t : kTypes) {
    if (t.type == type) return t.name;
  }
  return "?";
}

int64_t resolve_warmup_steps(double warmup_steps, double warmup_ratio, int64_t training_steps) {
  if (warmup_steps < 0 || warmup_ratio < 0 || warmup_ratio > 1) {
    fail(kComponent, "warmup_steps must be >= 0 and warmup_ratio in [0, 1]");
  }
  if (warmup_steps >= 1) return static_cast<int64_t>(warmup_steps);
  double fraction = warmup_steps > 0 ? warmup_steps : warmup_ratio;
  return static_cast<int64_t>(std::ceil(static_cast<double>(training_steps) * fraction));
}

ScheduleConfig make_schedule_config(ScheduleType type, int64_t warmup_steps, int64_t training_steps,
                                    double base_lr, const Json& kwargs) {
  if (!kwargs.is_null() && !kwargs.is_object())
    fail(kComponent, "lr_scheduler_kwargs must be a JSON object");
  static const char* const kKnown[] = {"num_cycles",      "min_lr",           "min_lr_rate",
                                       "num_decay_steps", "num_stable_steps", "warmup_type",
                                       "decay_type",      "min_lr_ratio",     "timescale"};
  if (kwargs.is_object()) {
    for (const auto& [key, value] : kwargs.items()) {
      if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
        fail(kComponent, "unknown lr_scheduler_kwargs key '" + key + "'");
      }
    }
  }
  const Json args = kwargs.is_object() ? kwargs : Json::object();
  ScheduleConfig c;
  c.type = type;
  c.warmup_steps = warmup_steps;
  c.training_steps = training_steps;
  c.num_cycles = number_kwarg(args, "num_cycles", 0.5);
  if (type == ScheduleType::kCosineWithMinLr) {
    const bool has_lr = args.contains("min_lr"), has_rate = args.contains("min_lr_rate");
    if (has_lr == has_rate) {
      fail(
          kComponent,
          "cosine_with_min_lr needs exactly one of min_lr or min_lr_rate in --lr_scheduler_kwargs");
    }
    c.min_lr_rate =
        has_lr ? number_kwarg(args, "min_lr", 0) / base_lr : number_kwarg(args, "min_lr_rate", 0);
  }
  if (type == ScheduleType::kWarmupStableDecay) {
    if (!args.contains("num_decay_steps")) {
      fail(kComponent, "warmup_stable_decay needs num_decay_steps in --lr_scheduler_kwargs");
    }
    c.num_decay_steps = static_cast<int64_t>(number_kwarg(args, "num_decay_steps", 0));
    c.num_stable_steps = static_cast<int64_t>(number_kwarg(args, "num_stable_steps", -1));
    if (c.num_stable_steps < 0)
      c.num_stable_steps = training_steps - warmup_steps - c.num_decay_steps;
    c.warmup_type = shape_kwarg(args, "warmup_type", "linear");
    c.decay_type = shape_kwarg(args, "decay_type", "cosine");
    c.min_lr_ratio = number_kwarg(args, "min_lr_ratio", 0.0);
  }
  if (type == ScheduleType::kInverseSqrt) {
    // get_inverse_sqrt_schedule: timescale defaults to the warmup, or 10_000 without one.
    c.timescale = static_cast<int64_t>(
        number_kwarg(args, "timescale", static_cast<double>(warmup_steps ? warmup_steps : 10000)));
    if (c.timescale <= 0) fail(kComponent, "lr_scheduler_kwargs.timescale must be positive");
  }
  return c;
}

double schedule_factor(const ScheduleConfig& c, int64_t step) {
  const int64_t warmup = c.warmup_steps;
  switch (c.type) {
    case ScheduleType::kConstant:
      return 1.0;
    case ScheduleType::kConstantWithWarmup:
      return step < warmup ? warmup_factor(step, warmup) : 1.0;
    case ScheduleType::kLinear:
      if (step < warmup) return warmup_factor(step, warmup);
      return std::max(0.0,
                      static_cast<double>(c.training_steps - step) /
                          static_cast<double>(std::max<int64_t>(1, c.training_steps - warmup)));
    case ScheduleType::kCosine:
    case ScheduleType::kCosineWithMinLr: {
      if (step < warmup) return warmup_factor(step, warmup);
      const double progress = static_cast<double>(step - warmup) /
                              static_cast<double>(std::max<int64_t>(1, c.training_steps - warmup));
      const double factor =
          cosine_factor(progress, c.num_cycles) * (1 - c.min_lr_rate) + c.min_lr_rate;
      return std::max(0.0, factor);
    }
    case ScheduleType::kWarmupStableDecay: {
      if (step < warmup) {
        const double f = wsd_shape(c.warmup_type, warmup_factor(step, warmup), true, c.num_cycles);
        return std::max(0.0, f * (1.0 - c.min_lr_ratio) + c.min_lr_ratio);
      }
      if (step < warmup + c.num_stable_steps) return 1.0;
      if (step < warmup + c.num_stable_steps + c.num_decay_steps) {
        const double progress = static_cast<double>(step - warmup - c.num_stable_steps) /
                                static_cast<double>(std::max<int64_t>(1, c.num_decay_steps));
        const double f = wsd_shape(c.decay_type, progress, false, c.num_cycles);
        return std::max(0.0, f * (1.0 - c.min_lr_ratio) + c.min_lr_ratio);
      }
      return c.min_lr_ratio;
    }
    case ScheduleType::kInverseSqrt: {
      if (step < warmup) return warmup_factor(step, warmup);
      // 1 / sqrt((step + timescale - warmup) / timescale): 1 at the end of warmup.
      const double shifted = static_cast<double>(step + c.timescale - warmup);
      return 1.0 / std::sqrt(shifted / static_cast<double>(c.timescale));
    }
  }
  return 1.0;
}

}  // namespace sft
