// QLoRA's flags, as TRL's get_quantization_config turns them into a BitsAndBytesConfig:
//   --load_in_4bit            the decoder layers' Linear weights held 4-bit (model/quant4_plan.h)
//   --bnb_4bit_quant_type     nf4 (TRL's default) or fp4
//   --use_bnb_nested_quant    nested statistics (bnb_4bit_use_double_quant)
//   --bnb_4bit_quant_storage  the dtype a saved 4-bit checkpoint types its packed bytes as
//   --dtype                   bnb_4bit_compute_dtype, and the dtype weights are quantized from
//   --load_in_8bit            refused with a hint: sft has no LLM.int8 kernels
// A 4-bit base trains only with LoRA adapters (--use_peft, or an adapter folder as the model).
#pragma once

#include <optional>
#include <string>

#include "core/tensor.h"
#include "io/options.h"
#include "model/quant4_plan.h"

namespace sft {

struct QuantArgs {
  bool load_in_4bit = false;
  bool load_in_8bit = false;
  std::string bnb_4bit_quant_type = "nf4";
  bool use_bnb_nested_quant = false;
  std::optional<std::string> bnb_4bit_quant_storage;  // None: uint8
};

void add_quant_options(OptionSet& options, QuantArgs& q);

// Checks the flags (before any work): the quant type, the storage dtype, 8-bit, 4-bit without
// LoRA (`lora`: --use_peft or an adapter folder as the model). Appends notices for flags that
// change nothing here.
void validate_quant_args(const QuantArgs& q, bool lora, std::vector<std::string>& notices);

// The plan --load_in_4bit asks for; `dtype` is --dtype resolved ("float32", "bfloat16", ...;
// "auto" is the config.json's dtype, `config_dtype`).
model::Quant4Plan quant4_plan(const QuantArgs& q, const std::string& dtype, DType config_dtype);

// What `sft train` loads 4-bit: a base folder saved 4-bit (its config.json's bitsandbytes
// quantization_config) as it is stored, else the --load_in_4bit plan, else nothing. Refuses a
// 4-bit folder without LoRA (`lora`) before any weight is read.
std::optional<model::Quant4Plan> quant4_plan_for(const QuantArgs& q, const std::string& dtype,
                                                 bool lora, const std::string& base_dir);

}  // namespace sft
