#include "cli/generation_setup.h"

#include <filesystem>

#include "io/json.h"

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

}  // namespace sft::cli
