// The mixture-of-experts flags (see moe_args.h).
#include "train/moe_args.h"

#include <cstdio>

#include "core/error.h"
#include "io/options.h"

namespace sft {

namespace {

constexpr std::string_view kComponent = "args";

constexpr const char* kNoExpertParallel =
    "expert parallelism is not built in sft.cpp (hint: drop it; mpirun -np N trains a mixture "
    "of experts data parallel, each rank holding every expert)";

// 0.01 as the user wrote it, not std::to_string's 0.010000.
std::string number_text_of(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

}  // namespace

bool take_moe_init_kwarg(TrainingArgs& a, const std::string& key, const Json& value) {
  if (key == "router_aux_loss_coef") {
    if (!value.is_number())
      fail_usage(kComponent,
                 "--model_init_kwargs: router_aux_loss_coef must be a number, got " + value.dump());
    a.init_router_aux_loss_coef = value.get<double>();
    return true;
  }
  if (key == "output_router_logits") {
    if (!value.is_boolean())
      fail_usage(kComponent,
                 "--model_init_kwargs: output_router_logits must be true or false, "
                 "got " +
                     value.dump());
    if (!value.get<bool>())
      a.notices.push_back(
          "--model_init_kwargs output_router_logits false has no effect: TRL's SFTTrainer "
          "turns the load-balancing loss on whenever router_aux_loss_coef is not 0 (set "
          "--router_aux_loss_coef 0 to train without it)");
    return true;
  }
  if (key == "distributed_config" && value.is_object()) {
    const auto ep = value.find("ep_size");
    const auto enable = value.find("enable_expert_parallel");
    const bool asks = (ep != value.end() && ep->is_number_integer() && ep->get<int64_t>() > 1) ||
                      (enable != value.end() && enable->is_boolean() && enable->get<bool>());
    if (asks)
      fail_usage(kComponent, "--model_init_kwargs distributed_config " + value.dump() + ": " +
                                 kNoExpertParallel);
  }
  return false;
}

void validate_expert_parallel_args(const TrainingArgs& a) {
  if (a.ep_size < 1) fail_usage(kComponent, "--ep_size must be at least 1");
  if (a.ep_size > 1)
    fail_usage(kComponent, "--ep_size " + std::to_string(a.ep_size) + ": " + kNoExpertParallel);
}

double router_aux_loss_coef(const TrainingArgs& a, const ModelConfig& config) {
  if (a.router_aux_loss_coef && *a.router_aux_loss_coef != 0 && !config.has_experts())
    fail_usage(kComponent, "--router_aux_loss_coef " + number_text_of(*a.router_aux_loss_coef) +
                               ": the model (model_type " +
                               std::string(model_type_name(config.model_type)) +
                               ") is not a mixture of experts, so there is no load-balancing "
                               "loss to weight (hint: drop the flag)");
  if (!config.has_experts()) return 0;
  if (a.router_aux_loss_coef) return *a.router_aux_loss_coef;
  if (a.init_router_aux_loss_coef) return *a.init_router_aux_loss_coef;
  return config.router_aux_loss_coef;
}

}  // namespace sft
