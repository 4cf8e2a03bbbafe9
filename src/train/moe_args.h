// The mixture-of-experts flags as `trl sft` takes them (TRL 1.16, transformers 5.24):
//   --router_aux_loss_coef X  SFTConfig's: the load-balancing loss's weight; absent, the model
//                             config's; 0 turns the loss off (no aux_loss is logged); non-zero on
//                             a model without experts is an error, as TRL's ValueError.
//   --model_init_kwargs '{"router_aux_loss_coef": X, "output_router_logits": true}'
//                             from_pretrained sets these on the model config: its coefficient
//                             counts where --router_aux_loss_coef is absent; output_router_logits
//                             is what TRL's SFTTrainer sets itself (on unless the coefficient is
//                             0), so false only earns a notice.
//   --ep_size E, or --model_init_kwargs '{"distributed_config": {"ep_size": E}}'
//                             (transformers' DistributedConfig) expert parallelism: groups of E
//                             adjacent data-parallel ranks each split every expert layer's
//                             experts (model/expert_parallel.h; the trainer's side in
//                             train/expert_shards.h); with --tp_size T each tensor-parallel
//                             rank's data-parallel group splits so (parallel/groups.h). The
//                             data-parallel size (world / T) and the number of experts must
//                             divide by E. Refused before any work with what it does not
//                             compose with yet: ZeRO (any stage), LoRA
//                             (--use_peft), a GPU, a model without experts; and the deprecated
//                             enable_expert_parallel without an ep_size.
#pragma once

#include <string>

#include "io/json.h"
#include "model/config.h"
#include "train/args.h"

namespace sft {

// A --model_init_kwargs key this file owns (router_aux_loss_coef, output_router_logits,
// distributed_config's expert parallelism): checked and stored in `a`; false for any other key.
bool take_moe_init_kwarg(TrainingArgs& a, const std::string& key, const Json& value);

// --ep_size (or distributed_config's, settled into a.ep_size here): at least 1, dividing the
// launch's world size, and none of the flags it does not compose with; a usage error naming
// both flags otherwise.
void validate_expert_parallel_args(TrainingArgs& a);

// Once config.json is read (before the weights): --ep_size above 1 needs experts that divide
// by it and the CPU; a usage error naming the flag, the config key and `where` (the model).
void check_expert_parallel(const TrainingArgs& a, const ModelConfig& config,
                           const std::string& where);

// The coefficient TRL's SFTTrainer weights the load-balancing loss with for `config` (above);
// a usage error naming the flag for a non-zero --router_aux_loss_coef on a model without experts.
double router_aux_loss_coef(const TrainingArgs& a, const ModelConfig& config);

}  // namespace sft
