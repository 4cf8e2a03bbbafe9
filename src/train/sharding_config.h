// TRL's, accelerate's and DeepSpeed's names for sharded data parallelism, mapped onto one
// ZeRO stage (0: plain data parallel, 1: optimizer state, 2: + gradients, 3: + parameters):
//
//   --accelerate_config  TRL's bundled configs: single_gpu, multi_gpu, ddp → 0; zero1, zero2,
//                        zero3 → their stage; fsdp, fsdp1, fsdp2 → 3 (their FULL_SHARD, as
//                        TRL's fsdp1.yaml / fsdp2.yaml say).
//   --fsdp "OPTIONS"     TrainingArguments' space-separated words: full_shard → 3,
//                        shard_grad_op → 2, no_shard → 0 (none of them: full_shard, as
//                        accelerate defaults); auto_wrap is what sft does anyway (per layer),
//                        offload has no effect (everything is in CPU memory already);
//                        hybrid_shard / hybrid_shard_zero2 are refused (no node groups).
//   --fsdp_config X      a JSON file or inline JSON object (keys with or without transformers'
//                        "fsdp_" prefix): reshard_after_forward false → stage 2 (FSDP2's
//                        SHARD_GRAD_OP), sharding_strategy as accelerate spells it; every other
//                        key gets one notice naming it as ignored.
//   --deepspeed X        a DeepSpeed JSON file (or inline JSON object): zero_optimization.stage
//                        0–3 (absent: 0, DeepSpeed's default); every other key, top level or
//                        inside zero_optimization, gets one notice naming it as ignored.
//
// Errors (sft::Error, which args turns into usage errors) name the file, the place (line and
// column of a JSON syntax error, the key of a bad value) and end with a hint. Pure: no
// TrainingArgs, so tests/fuzz/fuzz_sharding_config.cpp covers the key handling.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/json.h"

namespace sft {

struct ShardingChoice {
  std::optional<int64_t> stage;      // none: the flags say nothing about sharding
  std::vector<std::string> notices;  // one line per ignored option or key
  std::string source;                // what set the stage ("--deepspeed ds.json")
};

// The JSON behind --deepspeed / --fsdp_config: an inline object ("{...}") or a file's text.
Json read_sharding_json(const std::string& value, const std::string& flag);
// Each flag on its own; `source` names it in messages (the flag and, for files, the path).
ShardingChoice zero_stage_of_deepspeed(const Json& config, const std::string& source);
ShardingChoice zero_stage_of_fsdp(const std::string& options);
// `fsdp_stage`: the stage --fsdp chose (fsdp_config refines it); none: --fsdp not given.
ShardingChoice zero_stage_of_fsdp_config(const Json& config, const std::string& source,
                                         std::optional<int64_t> fsdp_stage);
ShardingChoice zero_stage_of_accelerate_config(const std::string& name);

}  // namespace sft
