// See lora_options.h.
#include "train/lora_options.h"

namespace sft {

model::LoraConfig lora_config_from_args(const TrainingArgs& args) {
  model::LoraConfig lc;
  lc.r = args.lora_r;
  lc.alpha = static_cast<double>(args.lora_alpha);
  lc.dropout = args.lora_dropout;
  lc.use_rslora = args.use_rslora;
  lc.target_modules = args.lora_target_modules;
  lc.modules_to_save = args.lora_modules_to_save;
  lc.target_parameters = args.lora_target_parameters;
  lc.base_model_name_or_path = args.model_name_or_path;
  return lc;
}

}  // namespace sft
