// The mixture-of-experts flags (see moe_args.h).
#include "train/moe_args.h"

#include <cstdio>

#include "core/error.h"
#include "io/options.h"
#include "train/args_sharding.h"
#include "train/device_choice.h"

namespace sft {

namespace {

constexpr std::string_view kComponent = "args";

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
  if (key == "distributed_config") {
    if (!value.is_object())
      fail_usage(kComponent,
                 "--model_init_kwargs: distributed_config must be an object such as "
                 "{\"ep_size\": 2}, got " +
                     value.dump());
    const auto ep = value.find("ep_size");
    const auto enable = value.find("enable_expert_parallel");
    if (ep != value.end()) {
      if (!ep->is_number_integer() || ep->get<int64_t>() < 1)
        fail_usage(kComponent,
                   "--model_init_kwargs distributed_config: ep_size must be a "
                   "positive integer, got " +
                       ep->dump());
      a.init_ep_size = ep->get<int64_t>();
    } else if (enable != value.end() && enable->is_boolean() && enable->get<bool>()) {
      fail_usage(
          kComponent,
          "--model_init_kwargs distributed_config " + value.dump() +
              ": enable_expert_parallel without an ep_size (deprecated in transformers, "
              "where it means ep_size = tp_size) (hint: give \"ep_size\": E, or --ep_size E)");
    }
    // Its other keys (tp_size, fsdp_size, ...) are sft's own flags (--tp_size, --zero_stage).
    for (const auto& [k, v] : value.items())
      if (k != "ep_size" && k != "enable_expert_parallel")
        a.notices.push_back("--model_init_kwargs distributed_config key '" + k +
                            "' has no effect in sft.cpp (only ep_size is read; --tp_size and "
                            "--zero_stage set the other layouts)");
    return true;
  }
  return false;
}

void validate_expert_parallel_args(TrainingArgs& a) {
  if (a.ep_size < 1) fail_usage(kComponent, "--ep_size must be at least 1");
  if (a.init_ep_size) {
    if (a.ep_size != 1 && a.ep_size != *a.init_ep_size)
      fail_usage(kComponent, "--ep_size " + std::to_string(a.ep_size) +
                                 " and --model_init_kwargs distributed_config ep_size " +
                                 std::to_string(*a.init_ep_size) +
                                 " disagree (hint: give one of them)");
    a.ep_size = *a.init_ep_size;
  }
  if (a.ep_size == 1) return;
  const std::string ep = "--ep_size " + std::to_string(a.ep_size);
  // The EP groups split each tensor-parallel rank's data-parallel group (parallel/groups.h).
  const int64_t world = world_size_of_launch(a);
  const int64_t tp = a.tp_size > 1 && world % a.tp_size == 0 ? a.tp_size : 1;
  if ((world / tp) % a.ep_size != 0)
    fail_usage(kComponent, ep + ": the world size " + std::to_string(world) +
                               " (mpirun -np or --nproc_per_node)" +
                               (tp > 1 ? " over --tp_size " + std::to_string(tp) + " (" +
                                             std::to_string(world / tp) + " data-parallel ranks)"
                                       : "") +
                               " does not divide by it (hint: run a multiple of " +
                               std::to_string(a.ep_size * tp) + " processes)");
  auto refuse = [&](const std::string& other, const std::string& hint) {
    fail_usage(kComponent, ep + " with " + other +
                               ": expert parallelism does not compose with it yet (hint: " + hint +
                               ")");
  };
  if (a.zero_stage > 0)
    refuse("--zero_stage " + std::to_string(a.zero_stage) +
               " (or a --fsdp / --deepspeed / --accelerate_config sharding)",
           "--zero_stage 0, or --ep_size 1");
  if (a.use_peft) refuse("--use_peft", "full fine-tuning, or --ep_size 1");
}

void check_expert_parallel(const TrainingArgs& a, const ModelConfig& config,
                           const std::string& where) {
  if (a.ep_size == 1) return;
  const std::string ep = "--ep_size " + std::to_string(a.ep_size);
  if (!config.has_experts())
    fail_usage(kComponent, ep + ": " + where + " (model_type " +
                               std::string(model_type_name(config.model_type)) +
                               ") is not a mixture of experts, so there are no experts to split "
                               "(hint: drop --ep_size)");
  if (config.num_experts % a.ep_size != 0)
    fail_usage(kComponent, ep + ": the " + std::to_string(config.num_experts) + " experts of " +
                               where +
                               " (num_experts / num_local_experts) do not divide by it (hint: an "
                               "--ep_size that divides " +
                               std::to_string(config.num_experts) + ")");
  if (choose_device(device_environment(), a.use_cpu).device != Device::kCpu)
    fail_usage(kComponent, ep + " on a GPU: expert parallelism runs on the CPU only so far "
                                "(hint: --use_cpu, or --ep_size 1)");
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
