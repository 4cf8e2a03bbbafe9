// PEFT adapter folders (what PeftModel.save_pretrained writes and from_pretrained reads):
//
//   adapter_config.json        LoraConfig as PEFT 0.21 serialises it (every field it writes;
//                              the ones sft does not use at their defaults): r, lora_alpha,
//                              lora_dropout, target_modules, modules_to_save, use_rslora,
//                              task_type CAUSAL_LM, peft_type LORA, bias "none",
//                              base_model_name_or_path, ...
//   adapter_model.safetensors  "base_model.model.<module>.lora_A.weight" (r, I) and
//                              ".lora_B.weight" (O, r) per adapted projection, per adapted
//                              expert stack (target_parameters) lora_A (E·r, in) and lora_B
//                              (out, r·E) under the experts module (model/lora.h), and the
//                              modules_to_save copies as "base_model.model.<param name>"
//
// Reading refuses what sft does not compute (DoRA, rank/alpha patterns, biases, fan_in_fan_out,
// another peft_type or task) and names the file and field; loading the weights checks every
// tensor against the adapters the config implies on this base model (missing, unexpected,
// wrong shape — naming the file, the module and both shapes).
#pragma once

#include <cstdint>
#include <string>

#include "io/json.h"
#include "model/lora.h"
#include "model/transformer.h"

namespace sft {

inline constexpr const char* kAdapterConfigFile = "adapter_config.json";
inline constexpr const char* kAdapterWeightsFile = "adapter_model.safetensors";

// The folder holds an adapter_config.json.
bool is_adapter_dir(const std::string& dir);

model::LoraConfig read_adapter_config(const std::string& dir);
// adapter_config.json's content for `lora` (targets as resolved on the model).
Json adapter_config_json(const model::LoraModel& lora);

// Copies the adapter's tensors (any float dtype) into the model's LoRA parameters.
void load_adapter_weights(model::Transformer& model, const std::string& dir);

// The base model folder an adapter names: base_model_name_or_path as a folder (as given, or
// relative to the adapter folder), else a Hub id resolved by model_dir.h.
std::string resolve_adapter_base(const model::LoraConfig& config, const std::string& adapter_dir,
                                 const std::string& revision);

// An adapter folder as model_name_or_path: loads its base, enables LoRA with the adapter's
// config and loads its weights. `base_dir` receives the base folder.
// `seed` seeds the adapters' dropout masks (the loaded weights replace A's initialisation).
// With `quant4` the base is loaded 4-bit (QLoRA, Transformer::load_4bit).
model::Transformer load_model_with_adapter(const std::string& adapter_dir,
                                           const std::string& revision, std::string* base_dir,
                                           uint64_t seed = 0,
                                           const model::Quant4Plan* quant4 = nullptr);

// Where a model given to generate / evaluate / debug / merge comes from: a model folder or
// Hub id, or an adapter folder (then model_dir is its base, tokenizer_dir the adapter folder
// when it holds tokenizer.json, else the base).
struct ModelSource {
  std::string model_dir;
  std::string tokenizer_dir;
  std::string adapter_dir;  // "" = no adapter
};
ModelSource resolve_model_source(const std::string& name_or_path,
                                 const std::string& revision = "main");
model::Transformer load_model_source(const ModelSource& source);

}  // namespace sft
