#include "train/wandb_config.h"

#include <filesystem>
#include <sstream>

#include "train/export_json.h"

namespace sft {

namespace {

template <typename T>
Json opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// An option's shown text as a typed value, for options this file does not list by hand
// (new flags still reach the config; floats then carry the 6 digits --help shows).
Json from_shown(const std::string& text) {
  if (text == "None") return nullptr;
  if (text == "true") return true;
  if (text == "false") return false;
  if (text == "\"\"") return "";
  try {
    return Json::parse(text);  // numbers and JSON objects
  } catch (const Json::exception&) {
    return text;
  }
}

}  // namespace

Json training_args_json(const TrainingArgs& a) {
  Json j = Json::object();
  // Model (ModelConfig)
  j["model_name_or_path"] = a.model_name_or_path;
  j["model_revision"] = a.model_revision;
  j["dtype"] = a.dtype;
  j["use_peft"] = a.use_peft;
  j["lora_r"] = a.lora_r;
  j["lora_alpha"] = a.lora_alpha;
  j["lora_dropout"] = a.lora_dropout;
  j["lora_target_modules"] =
      a.lora_target_modules.empty() ? Json(nullptr) : Json(a.lora_target_modules);
  j["lora_modules_to_save"] =
      a.lora_modules_to_save.empty() ? Json(nullptr) : Json(a.lora_modules_to_save);
  j["use_rslora"] = a.use_rslora;
  j["use_dora"] = a.use_dora;
  // Data (ScriptArguments, SFTConfig)
  j["dataset_name"] = a.dataset_name;
  j["dataset_config"] = opt(a.dataset_config);
  j["dataset_train_split"] = a.dataset_train_split;
  j["dataset_test_split"] = a.dataset_test_split;
  j["dataset_streaming"] = a.dataset_streaming;
  j["dataset_text_field"] = a.dataset_text_field;
  j["dataset_columns"] = a.dataset_columns.empty() ? Json(nullptr) : Json(a.dataset_columns);
  j["dataset_num_proc"] = opt(a.dataset_num_proc);
  j["chat_template_path"] = opt(a.chat_template_path);
  j["eos_token"] = opt(a.eos_token);
  j["pad_token"] = opt(a.pad_token);
  j["max_length"] = opt(a.max_length);
  j["truncation_mode"] = a.truncation_mode;
  j["shuffle_dataset"] = a.shuffle_dataset;
  j["packing"] = a.packing;
  j["packing_strategy"] = a.packing_strategy;
  j["padding_free"] = a.padding_free;
  j["pad_to_multiple_of"] = opt(a.pad_to_multiple_of);
  j["eval_packing"] = opt(a.eval_packing);
  j["completion_only_loss"] = opt(a.completion_only_loss);
  j["assistant_only_loss"] = a.assistant_only_loss;
  j["loss_type"] = a.loss_type;
  j["skip_invalid_rows"] = a.skip_invalid_rows;
  j["eval_split_ratio"] = a.eval_split_ratio;
  // Training (TrainingArguments)
  j["output_dir"] = a.output_dir;
  j["overwrite_output_dir"] = a.overwrite_output_dir;
  j["num_train_epochs"] = a.num_train_epochs;
  j["max_steps"] = a.max_steps;
  j["per_device_train_batch_size"] = a.per_device_train_batch_size;
  j["per_device_eval_batch_size"] = a.per_device_eval_batch_size;
  j["gradient_accumulation_steps"] = a.gradient_accumulation_steps;
  j["gradient_checkpointing"] = a.gradient_checkpointing;
  j["seed"] = a.seed;
  j["data_seed"] = opt(a.data_seed);
  j["train_sampling_strategy"] = a.train_sampling_strategy;
  j["bf16"] = opt(a.bf16);
  j["fp16"] = a.fp16;
  j["learning_rate"] = a.learning_rate;
  j["lr_scheduler_type"] = a.lr_scheduler_type;
  j["lr_scheduler_kwargs"] =
      a.lr_scheduler_kwargs.is_null() ? Json::object() : a.lr_scheduler_kwargs;
  j["warmup_steps"] = a.warmup_steps;
  j["warmup_ratio"] = a.warmup_ratio;
  j["weight_decay"] = a.weight_decay;
  j["adam_beta1"] = a.adam_beta1;
  j["adam_beta2"] = a.adam_beta2;
  j["adam_epsilon"] = a.adam_epsilon;
  j["max_grad_norm"] = a.max_grad_norm;
  j["optim"] = a.optim;
  j["logging_steps"] = a.logging_steps;
  j["logging_first_step"] = a.logging_first_step;
  j["logging_strategy"] = a.logging_strategy;
  j["logging_dir"] = opt(a.logging_dir);
  j["report_to"] = a.report_to;
  j["run_name"] = opt(a.run_name);
  j["eval_strategy"] = a.eval_strategy;
  j["eval_steps"] = opt(a.eval_steps);
  j["save_strategy"] = a.save_strategy;
  j["save_steps"] = a.save_steps;
  j["save_total_limit"] = opt(a.save_total_limit);
  j["save_only_model"] = a.save_only_model;
  j["resume_from_checkpoint"] = opt(a.resume_from_checkpoint);
  j["disable_tqdm"] = opt(a.disable_tqdm);
  // sft.cpp's own
  j["max_shard_size"] = a.max_shard_size;
  j["init_from_config"] = a.init_from_config;
  j["skip_nonfinite_steps"] = a.skip_nonfinite_steps;
  j["num_threads"] = opt(a.num_threads);

  // Options added since this list was written: typed from their shown value.
  TrainingArgs copy = a;
  const OptionSet options = training_options(copy);
  std::istringstream help(options.help());
  for (std::string line; std::getline(help, line);) {
    if (line.rfind("  --", 0) != 0) continue;
    const std::string name = line.substr(4, line.find(' ', 4) - 4);
    if (j.contains(name)) continue;
    const size_t d = line.rfind(" (default: ");
    if (d == std::string::npos) continue;
    const std::string shown = line.substr(d + 11, line.size() - d - 12);
    j[name] = from_shown(shown);
  }
  return j;
}

Json wandb_model_config(const std::string& source_model_dir, const ModelConfig& config) {
  const std::filesystem::path file = std::filesystem::path(source_model_dir) / "config.json";
  if (!source_model_dir.empty() && std::filesystem::is_regular_file(file))
    return read_json_file(file.string(), "wandb");
  return export_json::model_config_to_json(config);
}

Json wandb_run_config(const Json& model_config, const TrainingArgs& args) {
  Json config = model_config.is_object() ? model_config : Json::object();
  const Json training = training_args_json(args);  // a named value: items() refers into it
  for (const auto& [k, v] : training.items()) config[k] = v;
  return config;
}

}  // namespace sft
