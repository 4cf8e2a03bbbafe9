// TrainingArgs (TRL's flag names) → PrepareOptions, shared by `sft prepare` and `sft train` so
// both prepare a dataset identically and hit the same token cache.
#pragma once

#include <string>

#include "data/prepare.h"
#include "train/args.h"

namespace sft {

// The token cache folder: $SFT_CACHE_DIR, else ~/.cache/sft/tokens.
std::string default_token_cache_dir();

// `tokenizer_path` is the resolved tokenizer folder (or tokenizer.json); `cache_dir` "" keeps
// the rows in memory. Throws "[args] ..." for a malformed --dataset_columns.
data::PrepareOptions prepare_options_from_args(const TrainingArgs& args,
                                               const std::string& tokenizer_path,
                                               const std::string& cache_dir);

}  // namespace sft
