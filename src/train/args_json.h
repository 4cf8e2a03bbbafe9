// Every `sft train` argument as JSON, under its flag name and typed as TRL's
// TrainingArguments.to_dict() holds it (optional values as null, lists as lists): what the
// W&B run config (wandb_config.h) and TensorBoard's "args" text (tensorboard_args.h) record.
#pragma once

#include "io/json.h"
#include "train/args.h"

namespace sft {

// The common flags with their exact values, then every other option from the value --help
// shows.
Json training_args_json(const TrainingArgs& args);

}  // namespace sft
