// The text summaries a TensorBoard run starts with, as transformers' TensorBoardCallback writes
// them at on_train_begin: "args" (TrainingArguments.to_json_string(): every argument, indented
// JSON) and "model_config" (the model's config.json as to_json_string() renders it), so a run's
// settings are readable beside its curves.
#pragma once

#include <string>

#include "io/json.h"
#include "model/config.h"
#include "train/args_json.h"

namespace sft {

// The "model_config" text: the source config.json if `source_model_dir` has one, else the
// config built from `config`; json.dumps(indent=2, sort_keys=True) + "\n" as transformers does.
std::string model_config_text(const std::string& source_model_dir, const ModelConfig& config);

}  // namespace sft
