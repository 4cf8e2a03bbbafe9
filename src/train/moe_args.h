// The mixture-of-experts flags as `trl sft` takes them (TRL 1.16, transformers 5.24):
//   --router_aux_loss_coef X  SFTConfig's: the load-balancing loss's weight; absent, the model
//                             config's; 0 turns the loss off (no aux_loss is logged); non-zero on
//                             a model without experts is an error, as TRL's ValueError.
//   --model_init_kwargs '{"router_aux_loss_coef": X, "output_router_logits": true}'
//                             from_pretrained sets these on the model config: its coefficient
//                             counts where --router_aux_loss_coef is absent; output_router_logits
//                             is what TRL's SFTTrainer sets itself (on unless the coefficient is
//                             0), so false only earns a notice.
// Expert parallelism is not built: --ep_size above 1, or a distributed_config in
// --model_init_kwargs asking for it (transformers' DistributedConfig ep_size /
// enable_expert_parallel), is refused before any work.
#pragma once

#include <string>

#include "io/json.h"
#include "model/config.h"
#include "train/args.h"

namespace sft {

// A --model_init_kwargs key this file owns (router_aux_loss_coef, output_router_logits,
// distributed_config's expert parallelism): checked and stored in `a`; false for any other key.
bool take_moe_init_kwarg(TrainingArgs& a, const std::string& key, const Json& value);

// --ep_size: 1 (the default) or a usage error saying expert parallelism is not built.
void validate_expert_parallel_args(const TrainingArgs& a);

// The coefficient TRL's SFTTrainer weights the load-balancing loss with for `config` (above);
// a usage error naming the flag for a non-zero --router_aux_loss_coef on a model without experts.
double router_aux_loss_coef(const TrainingArgs& a, const ModelConfig& config);

}  // namespace sft
