#include "train/model_card.h"

#include <filesystem>
#include <regex>

#include "io/atomic_file.h"
#include "io/json.h"
#include "train/export_json.h"

namespace sft {

namespace {

namespace fs = std::filesystem;

// A YAML scalar as PyYAML's safe_dump writes it: plain when unambiguous, else single-quoted.
std::string yaml_scalar(const std::string& s) {
  static const std::regex plain(R"([A-Za-z_][A-Za-z0-9_./-]*)");
  static const std::regex special(R"((?:true|false|yes|no|on|off|null|y|n|~)$)", std::regex::icase);
  if (std::regex_match(s, plain) && !std::regex_match(s, special)) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

// Python's repr of a float / int, as transformers' card prints hyperparameters.
std::string py_number(double v) {
  Json j = v;
  return j.dump();
}
std::string py_number(int64_t v) {
  return std::to_string(v);
}
std::string py_bool(bool v) {
  return v ? "True" : "False";
}

constexpr const char* kQuestion =
    "If you had a time machine, but could only go to the past or the future once and never "
    "return, which would you choose and why?";

constexpr const char* kTrlCitation = R"(@software{vonwerra2020trl,
  title   = {{TRL: Transformers Reinforcement Learning}},
  author  = {von Werra, Leandro and Belkada, Younes and Tunstall, Lewis and Beeching, Edward and Thrush, Tristan and Lambert, Nathan and Huang, Shengyi and Rasul, Kashif and Gallouédec, Quentin},
  license = {Apache-2.0},
  url     = {https://github.com/huggingface/trl},
  year    = {2020}
})";

}  // namespace

ModelCardInfo model_card_info(const TrainingArgs& a, int world_size,
                              const std::optional<std::string>& hub_model_id) {
  ModelCardInfo info;
  // TRL: the Hub repo's name when pushing, else the output folder's.
  const std::string out = fs::path(a.output_dir).lexically_normal().string();
  info.model_name = hub_model_id ? hub_model_id->substr(hub_model_id->rfind('/') + 1)
                                 : fs::path(out).filename().string();
  if (info.model_name.empty()) info.model_name = fs::path(out).parent_path().filename().string();
  std::error_code ec;
  if (fs::exists(a.model_name_or_path, ec))
    info.local_base_model = fs::path(a.model_name_or_path).lexically_normal().filename().string();
  else
    info.base_model = a.model_name_or_path;
  if (fs::exists(a.dataset_name, ec))
    info.local_dataset = fs::path(a.dataset_name).lexically_normal().filename().string();
  else
    info.dataset = a.dataset_name;
  info.pipeline_model = hub_model_id.value_or(a.output_dir);

  // transformers' extract_hyperparameters_from_trainer, names and order.
  auto& h = info.hyperparameters;
  const int64_t train_batch = a.per_device_train_batch_size;
  const int64_t eval_batch = a.per_device_eval_batch_size;
  h.emplace_back("learning_rate", py_number(a.learning_rate));
  h.emplace_back("train_batch_size", py_number(train_batch));
  h.emplace_back("eval_batch_size", py_number(eval_batch));
  h.emplace_back("seed", py_number(a.seed));
  if (world_size > 1) {
    h.emplace_back("distributed_type", "multi-process");
    h.emplace_back("num_devices", py_number(int64_t{world_size}));
  }
  if (a.gradient_accumulation_steps > 1)
    h.emplace_back("gradient_accumulation_steps", py_number(a.gradient_accumulation_steps));
  const int64_t total_train = train_batch * world_size * a.gradient_accumulation_steps;
  if (total_train != train_batch) h.emplace_back("total_train_batch_size", py_number(total_train));
  if (eval_batch * world_size != eval_batch)
    h.emplace_back("total_eval_batch_size", py_number(eval_batch * world_size));
  h.emplace_back("optimizer", "Use " + a.optim + " with betas=(" + py_number(a.adam_beta1) + "," +
                                  py_number(a.adam_beta2) +
                                  ") and epsilon=" + py_number(a.adam_epsilon) +
                                  " and optimizer_args=No additional optimizer arguments");
  h.emplace_back("lr_scheduler_type", a.lr_scheduler_type);
  if (a.warmup_steps != 0) h.emplace_back("lr_scheduler_warmup_steps", py_number(a.warmup_steps));
  if (a.max_steps != -1)
    h.emplace_back("training_steps", py_number(a.max_steps));
  else
    h.emplace_back("num_epochs", py_number(a.num_train_epochs));
  // SFT's own data settings, which decide what the model saw.
  if (a.max_length) h.emplace_back("max_length", py_number(*a.max_length));
  h.emplace_back("packing", py_bool(a.packing));
  if (a.assistant_only_loss) h.emplace_back("assistant_only_loss", "True");
  if (a.bf16.value_or(false)) h.emplace_back("mixed_precision_training", "bf16");
  return info;
}

std::string render_model_card(const ModelCardInfo& info) {
  std::string s = "---\n";
  if (info.base_model) s += "base_model: " + yaml_scalar(*info.base_model) + "\n";
  if (info.dataset) s += "datasets: " + yaml_scalar(*info.dataset) + "\n";
  s += "library_name: transformers\n";
  s += "model_name: " + yaml_scalar(info.model_name) + "\n";
  s += "tags:\n- generated_from_trainer\n- sft\n- sft.cpp\nlicence: license\n---\n\n";
  s += "# Model Card for " + info.model_name + "\n\n";
  s += "This model is a fine-tuned version of ";
  s += info.base_model
           ? "[" + *info.base_model + "](https://huggingface.co/" + *info.base_model + ")"
           : "the local model `" + info.local_base_model + "`";
  if (info.dataset)
    s += " on the [" + *info.dataset + "](https://huggingface.co/datasets/" + *info.dataset +
         ") dataset";
  else if (!info.local_dataset.empty())
    s += " on the local dataset `" + info.local_dataset + "`";
  s += ".\n";
  s += "It has been trained using sft.cpp, a C++ implementation of "
       "[TRL](https://github.com/huggingface/trl)'s SFTTrainer.\n\n";
  s += "## Quick start\n\n```python\nfrom transformers import pipeline\n\n";
  s += std::string("question = \"") + kQuestion + "\"\n";
  s += "generator = pipeline(\"text-generation\", model=\"" + info.pipeline_model +
       "\", device_map=\"auto\")\n";
  s += "output = generator([{\"role\": \"user\", \"content\": question}], max_new_tokens=128, "
       "return_full_text=False)[0]\n";
  s += "print(output[\"generated_text\"])\n```\n\n";
  s += "## Training procedure\n\n";
  s += "This model was trained with SFT.\n\n";
  s += "### Training hyperparameters\n\nThe following hyperparameters were used during training:\n";
  for (const auto& [name, value] : info.hyperparameters) s += "- " + name + ": " + value + "\n";
  s += "\n### Framework versions\n\n";
  s += std::string("- sft.cpp: ") + SFT_VERSION + "\n";
  s += "- TRL (the SFTTrainer it follows): 1.16.0\n";
  s += std::string("- Transformers (the model format it writes): ") +
       export_json::kTransformersVersion + "\n\n";
  s += "## Citations\n\nsft.cpp reimplements TRL's SFTTrainer. Cite TRL as:\n\n```bibtex\n";
  s += kTrlCitation;
  s += "\n```\n";
  return s;
}

void write_model_card(const std::string& output_dir, const ModelCardInfo& info) {
  write_file_atomically((fs::path(output_dir) / "README.md").string(), render_model_card(info));
}

}  // namespace sft
