// What `--report_to wandb` puts in the run's config, as transformers' WandbCallback does:
// the model's config.json keys, then every training argument under its TRL name
// (TrainingArguments.to_dict(): optional values as null, report_to as a list), the training
// arguments winning on a clash, and "model/num_parameters".
#pragma once

#include <cstdint>

#include <string>

#include "io/json.h"
#include "model/config.h"
#include "train/args.h"
#include "train/args_json.h"

namespace sft {

// The model's config as transformers' config.to_dict() gives it: the source folder's
// config.json when there is one, else the config serialized.
Json wandb_model_config(const std::string& source_model_dir, const ModelConfig& config);

// {**model_config, **training_args_json(args)}; `model_config` may be null.
Json wandb_run_config(const Json& model_config, const TrainingArgs& args);

}  // namespace sft
