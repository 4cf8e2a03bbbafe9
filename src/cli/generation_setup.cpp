#include "cli/generation_setup.h"

#include <filesystem>

#include "core/log.h"
#include "io/json.h"
#include "ops/backend.h"
#include "train/device_choice.h"

namespace sft::cli {

model::GenerateOptions generation_defaults(const std::string& model_dir,
                                           const ModelConfig& config) {
  model::GenerateOptions o;
  o.eos_token_ids = config.eos_token_ids;
  const std::string gen_path = model_dir + "/generation_config.json";
  if (!std::filesystem::exists(gen_path)) return o;
  const Json g = read_json_file(gen_path, "generate");
  if (g.contains("eos_token_id") && !g["eos_token_id"].is_null()) {
    o.eos_token_ids.clear();
    const Json& e = g["eos_token_id"];
    if (e.is_array())
      for (const Json& v : e) o.eos_token_ids.push_back(v.get<int64_t>());
    else
      o.eos_token_ids.push_back(e.get<int64_t>());
  }
  if (g.value("do_sample", false)) o.sampling.do_sample = true;
  if (g.contains("temperature") && g["temperature"].is_number())
    o.sampling.temperature = g["temperature"].get<double>();
  if (g.contains("top_k") && g["top_k"].is_number()) o.sampling.top_k = g["top_k"].get<int64_t>();
  if (g.contains("top_p") && g["top_p"].is_number()) o.sampling.top_p = g["top_p"].get<double>();
  return o;
}

std::vector<int64_t> chat_prompt_ids(const text::Tokenizer& tokenizer,
                                     const chat::ChatTemplate& chat_template,
                                     const chat::ChatInputs& inputs) {
  const std::vector<int32_t> ids =
      tokenizer.encode(chat_template.apply(inputs), /*add_special_tokens=*/false);
  return {ids.begin(), ids.end()};
}

void place_model(model::Transformer& model, bool use_cpu) {
  const DeviceEnvironment env = device_environment();
  const DeviceChoice choice = choose_device(env, use_cpu);
  // A CPU-only build has no choice to report (its output stays the generated text alone).
  if (compiled_backends() == "cpu") return;
  log_info("[device] ", device_report(choice, env).front());
  if (choice.device != Device::kCuda) return;
  if (model.params().has_4bit()) {
    log_info("[device] the 4-bit (QLoRA) base stays on the CPU: its matmul has no CUDA kernel yet");
    return;
  }
  cuda_init(choice.gpu);
  model.to_device(Device::kCuda);
}

}  // namespace sft::cli
