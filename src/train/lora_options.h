// The LoRA configuration TRL's --use_peft flags describe (TRL's get_peft_config): rank, alpha,
// dropout, rsLoRA, target modules, target parameters (the experts' stacks) and modules_to_save,
// for model::Transformer::enable_lora.
#pragma once

#include "model/lora.h"
#include "train/args.h"

namespace sft {

model::LoraConfig lora_config_from_args(const TrainingArgs& args);

}  // namespace sft
