// training_args_json: see args_json.h.
#include "train/args_json.h"

#include <algorithm>

#include "io/options.h"

namespace sft {

namespace {

template <typename T>
Json opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// An option's shown value (OptionSet's --help text) as JSON.
Json option_value(const Option& option) {
  const std::string text = option.show();
  if (option.optional && text == "None") return nullptr;
  switch (option.type) {
    case OptionType::kBool:
      return text == "true";
    case OptionType::kInt:
      return std::stoll(text);
    case OptionType::kFloat:
      return std::stod(text);
    case OptionType::kString:
      return text == "\"\"" ? std::string() : text;
    case OptionType::kStringList: {
      Json list = Json::array();
      for (size_t start = 0; start <= text.size();) {
        const size_t comma = std::min(text.find(',', start), text.size());
        list.push_back(text.substr(start, comma - start));
        start = comma + 1;
      }
      return list;
    }
    case OptionType::kJson:
      return Json::parse(text);
  }
  return text;
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

  // Options not listed above (added since): typed from the value --help shows (floats
  // then carry its 6 significant digits).
  TrainingArgs copy = a;  // the option set binds to fields it may write; read a copy
  const OptionSet options = training_options(copy);
  for (const Option& option : options.options())
    if (!j.contains(option.name)) j[option.name] = option_value(option);
  return j;
}

}  // namespace sft
