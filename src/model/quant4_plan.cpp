// Which weights are 4-bit, and quantizing them. See quant4_plan.h.
#include "model/quant4_plan.h"

#include "core/error.h"
#include "core/half.h"
#include "ops/cpu/bnb_quant.h"

namespace sft::model {

namespace {

// transformers' module name of a weight: its parameter name without ".weight".
std::string module_of(const std::string& name) {
  const std::string suffix = ".weight";
  if (name.size() > suffix.size() &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return name.substr(0, name.size() - suffix.size());
  return name;
}

// transformers' should_convert_module: a skip entry names the module itself, or any module
// under it, or matches its last components ("lm_head", "mlp.down_proj").
bool skipped(const std::string& module, const std::vector<std::string>& skip) {
  for (const std::string& key : skip) {
    if (key.empty()) continue;
    if (module == key) return true;
    if (module.size() > key.size() &&
        module.compare(module.size() - key.size(), key.size(), key) == 0 &&
        module[module.size() - key.size() - 1] == '.')
      return true;
    if (module.rfind(key + ".", 0) == 0 || module.find("." + key + ".") != std::string::npos)
      return true;
  }
  return false;
}

}  // namespace

bool quantized_by_plan(const ParamSpec& spec, const Quant4Plan& plan) {
  // The decoder layers' projections: nn.Linear weights (2-D, not norms or biases).
  if (spec.layer < 0 || spec.shape.size() != 2) return false;
  if (spec.role != ParamRole::kAttention && spec.role != ParamRole::kMlp) return false;
  return !skipped(module_of(spec.name), plan.skip_modules);
}

Quant4Data quantize_for_plan(std::span<const float> values, const Quant4Plan& plan) {
  std::vector<float> rounded;
  if (plan.input_dtype == DType::kBF16 || plan.input_dtype == DType::kF16) {
    rounded.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      rounded[i] = plan.input_dtype == DType::kBF16 ? bf16_to_f32(f32_to_bf16(values[i]))
                                                    : f16_to_f32(f32_to_f16(values[i]));
    values = rounded;
  }
  const auto n = static_cast<int64_t>(values.size());
  Quant4Data q;
  q.packed.resize(static_cast<size_t>((n + 1) / 2));
  q.absmax.resize(static_cast<size_t>(ops::cpu::quant_block_count(n, plan.blocksize)));
  ops::cpu::quantize_4bit(values, plan.blocksize, plan.type, q.packed, q.absmax);
  if (plan.nested) {
    // What bitsandbytes keeps is the 8-bit form; every matmul dequantizes it first.
    const ops::cpu::NestedAbsmax nested =
        ops::cpu::nest_absmax(q.absmax, ops::cpu::absmax_mean(q.absmax));
    ops::cpu::unnest_absmax(nested, q.absmax);
  }
  return q;
}

std::optional<Quant4Plan> plan_from_model_config(const Json& config, const std::string& where) {
  if (!config.is_object() || !config.contains("quantization_config")) return std::nullopt;
  const Json& q = config["quantization_config"];
  auto refuse = [&](const std::string& what, const std::string& hint) {
    fail_in_file("quant", {where, "quantization_config"}, what, hint);
  };
  if (!q.is_object()) refuse("must be an object", "the config.json transformers writes");
  const std::string method = q.value("quant_method", std::string());
  // gpt-oss's MXFP4 experts are dequantized at load (model/mxfp4.h): a dense model, no 4-bit base.
  if (method == "mxfp4") return std::nullopt;
  if (method != "bitsandbytes")
    refuse("quant_method '" + method +
               "' is not supported: sft.cpp reads bitsandbytes 4-bit "
               "checkpoints only",
           "train from the unquantized model, with --load_in_4bit for QLoRA");
  if (q.value("load_in_8bit", false) || q.value("_load_in_8bit", false))
    refuse("an 8-bit (LLM.int8) checkpoint is not supported",
           "train from the unquantized model, with --load_in_4bit for QLoRA");
  if (!q.value("load_in_4bit", false) && !q.value("_load_in_4bit", false))
    refuse("bitsandbytes config without load_in_4bit", "the config.json transformers writes");
  Quant4Plan plan;
  const std::string type = q.value("bnb_4bit_quant_type", std::string("fp4"));
  if (type == "nf4")
    plan.type = ops::Quant4Type::kNf4;
  else if (type == "fp4")
    plan.type = ops::Quant4Type::kFp4;
  else
    refuse("bnb_4bit_quant_type '" + type + "' is not a bitsandbytes 4-bit type", "nf4 or fp4");
  plan.nested = q.value("bnb_4bit_use_double_quant", false);
  if (q.contains("llm_int8_skip_modules") && q["llm_int8_skip_modules"].is_array())
    for (const Json& m : q["llm_int8_skip_modules"])
      if (m.is_string()) plan.skip_modules.push_back(m.get<std::string>());
  return plan;
}

}  // namespace sft::model
