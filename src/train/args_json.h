// Every `sft train` argument as JSON, under its flag name and typed as TRL's
// TrainingArguments.to_dict() holds it (optional values as null, lists as lists, *_token fields
// masked as "<HUB_TOKEN>"): what the
// W&B run config (wandb_config.h) and TensorBoard's "args" text (tensorboard_args.h) record.
// It reads the one flag table, training_options() (train/args.cpp): a flag added there is
// recorded with its exact value (Option::value, io/options.h), with nothing to list here.
#pragma once

#include "io/json.h"
#include "train/args.h"

namespace sft {

Json training_args_json(const TrainingArgs& args);

}  // namespace sft
