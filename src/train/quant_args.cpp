// QLoRA's flags. See quant_args.h.
#include "train/quant_args.h"

#include <algorithm>
#include <vector>

#include "io/json.h"

namespace sft {

namespace {

constexpr std::string_view kComponent = "args";

}  // namespace

void add_quant_options(OptionSet& o, QuantArgs& q) {
  const std::string group = "QLoRA (bitsandbytes 4-bit)";
  o.add_bool("load_in_4bit", &q.load_in_4bit, group,
             "hold the decoder layers' Linear weights in bitsandbytes' 4-bit format (QLoRA; "
             "needs --use_peft)");
  o.add_bool("load_in_8bit", &q.load_in_8bit, group,
             "LLM.int8 8-bit loading (not supported: refused; use --load_in_4bit)");
  o.add_string("bnb_4bit_quant_type", &q.bnb_4bit_quant_type, group, "nf4 or fp4");
  o.add_bool("use_bnb_nested_quant", &q.use_bnb_nested_quant, group,
             "nested statistics: the absmax themselves quantized 8-bit (double quantization)");
  o.add_optional_string("bnb_4bit_quant_storage", &q.bnb_4bit_quant_storage, group,
                        "dtype of a saved 4-bit checkpoint's packed bytes (uint8, int8, float16, "
                        "bfloat16, float32, float64); sft keeps them as bytes");
}

void validate_quant_args(const QuantArgs& q, bool lora, std::vector<std::string>& notices) {
  if (q.load_in_8bit)
    fail_usage(kComponent,
               "--load_in_8bit true: 8-bit (LLM.int8) loading is not supported in sft.cpp "
               "(hint: --load_in_4bit true --use_peft true trains QLoRA on a 4-bit base)");
  if (q.bnb_4bit_quant_type != "nf4" && q.bnb_4bit_quant_type != "fp4")
    fail_usage(kComponent, "--bnb_4bit_quant_type '" + q.bnb_4bit_quant_type +
                               "' is not a bitsandbytes 4-bit type (hint: nf4, TRL's default, "
                               "or fp4)");
  // transformers' BitsAndBytesConfig accepts these names (others raise a ValueError).
  static const std::vector<std::string> kStorage = {"float16", "float32", "int8",
                                                    "uint8",   "float64", "bfloat16"};
  if (q.bnb_4bit_quant_storage && *q.bnb_4bit_quant_storage != "None" &&
      std::find(kStorage.begin(), kStorage.end(), *q.bnb_4bit_quant_storage) == kStorage.end())
    fail_usage(kComponent, "--bnb_4bit_quant_storage '" + *q.bnb_4bit_quant_storage +
                               "' is not a storage dtype transformers accepts (hint: uint8, "
                               "int8, float16, bfloat16, float32 or float64)");
  if (!q.load_in_4bit) {
    const bool other = q.bnb_4bit_quant_type != "nf4" || q.use_bnb_nested_quant ||
                       (q.bnb_4bit_quant_storage && *q.bnb_4bit_quant_storage != "None");
    if (other)
      notices.push_back(
          "--bnb_4bit_quant_type / --use_bnb_nested_quant / --bnb_4bit_quant_storage have no "
          "effect without --load_in_4bit (as in TRL)");
    return;
  }
  if (!lora)
    fail_usage(kComponent,
               "--load_in_4bit true without --use_peft: a 4-bit base cannot be trained (its "
               "weights are frozen 4-bit codes; transformers' Trainer refuses purely quantized "
               "models too) (hint: add --use_peft true to train LoRA adapters on it, QLoRA)");
  if (q.bnb_4bit_quant_storage && *q.bnb_4bit_quant_storage != "None" &&
      *q.bnb_4bit_quant_storage != "uint8")
    notices.push_back("--bnb_4bit_quant_storage " + *q.bnb_4bit_quant_storage +
                      " has no effect in sft.cpp: it only retypes the packed bytes of a saved "
                      "4-bit checkpoint (FSDP's flat parameters need it), and sft keeps them as "
                      "bytes and saves the adapter, not the 4-bit base");
}

model::Quant4Plan quant4_plan(const QuantArgs& q, const std::string& dtype, DType config_dtype) {
  model::Quant4Plan plan;
  plan.type = q.bnb_4bit_quant_type == "fp4" ? ops::Quant4Type::kFp4 : ops::Quant4Type::kNf4;
  plan.nested = q.use_bnb_nested_quant;
  if (dtype == "bfloat16")
    plan.input_dtype = DType::kBF16;
  else if (dtype == "float16")
    plan.input_dtype = DType::kF16;
  else if (dtype == "auto")
    plan.input_dtype = config_dtype;
  else
    plan.input_dtype = DType::kF32;
  return plan;
}

std::optional<model::Quant4Plan> quant4_plan_for(const QuantArgs& q, const std::string& dtype,
                                                 bool lora, const std::string& base_dir) {
  const std::string config_path = base_dir + "/config.json";
  const Json config = read_json_file(config_path, "quant");
  std::optional<model::Quant4Plan> stored = model::plan_from_model_config(config, config_path);
  if (stored && !lora)
    fail_usage(kComponent, base_dir +
                               " is a bitsandbytes 4-bit checkpoint: its frozen 4-bit weights "
                               "cannot be trained in full (hint: --use_peft true trains LoRA "
                               "adapters on it, QLoRA)");
  const DType config_dtype =
      config.value("dtype", config.value("torch_dtype", std::string())) == "bfloat16" ? DType::kBF16
                                                                                      : DType::kF32;
  if (stored) {
    stored->input_dtype = quant4_plan(q, dtype, config_dtype).input_dtype;
    return stored;
  }
  if (!q.load_in_4bit) return std::nullopt;
  return quant4_plan(q, dtype, config_dtype);
}

}  // namespace sft
