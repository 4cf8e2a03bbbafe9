#include "train/sharding_config.h"

#include <sstream>

#include "core/error.h"
#include "io/mapped_file.h"

namespace sft {

namespace {

constexpr std::string_view kComponent = "args";

std::string strip_fsdp_prefix(const std::string& key) {
  return key.rfind("fsdp_", 0) == 0 ? key.substr(5) : key;
}

// The JSON value as one short line, for messages.
std::string shown(const Json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

Json read_sharding_json(const std::string& value, const std::string& flag) {
  const size_t first = value.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && value[first] == '{')
    return parse_json_strict(value, kComponent, flag + " (inline JSON)");
  return parse_json_strict(read_text_file(value, kComponent), kComponent, value);
}

ShardingChoice zero_stage_of_deepspeed(const Json& config, const std::string& source) {
  ShardingChoice c;
  c.source = "--deepspeed " + source;
  if (!config.is_object())
    fail_in_file(kComponent, {source, "top level"},
                 "a DeepSpeed config is a JSON object, got " + json_type_name(config),
                 "{\"zero_optimization\": {\"stage\": 2}}");
  c.stage = 0;  // DeepSpeed's default: no zero_optimization, no sharding
  for (const auto& [key, value] : config.items()) {
    if (key != "zero_optimization") {
      c.notices.push_back("--deepspeed " + source + ": key '" + key +
                          "' is ignored (sft.cpp takes batch sizes, precision, optimizer and "
                          "schedule from its own flags)");
      continue;
    }
    if (!value.is_object())
      fail_in_file(kComponent, {source, "key 'zero_optimization'"},
                   "expected an object, got " + json_type_name(value),
                   "\"zero_optimization\": {\"stage\": 2}");
    for (const auto& [zkey, zvalue] : value.items()) {
      if (zkey != "stage") {
        c.notices.push_back("--deepspeed " + source + ": key 'zero_optimization." + zkey +
                            "' is ignored (sft.cpp's collectives have their own buckets; "
                            "nothing is offloaded)");
        continue;
      }
      if (!zvalue.is_number_integer() || zvalue.get<int64_t>() < 0 || zvalue.get<int64_t>() > 3)
        fail_in_file(kComponent, {source, "key 'zero_optimization.stage'"},
                     "the ZeRO stage must be 0, 1, 2 or 3, got " + shown(zvalue),
                     "2 shards optimizer state and gradients, 3 the parameters too");
      c.stage = zvalue.get<int64_t>();
    }
  }
  return c;
}

ShardingChoice zero_stage_of_fsdp(const std::string& options) {
  ShardingChoice c;
  c.source = "--fsdp \"" + options + "\"";
  std::istringstream in(options);
  std::string word;
  bool any = false;
  while (in >> word) {
    any = true;
    std::optional<int64_t> stage;
    if (word == "full_shard")
      stage = 3;
    else if (word == "shard_grad_op")
      stage = 2;
    else if (word == "no_shard")
      stage = 0;
    else if (word == "auto_wrap")
      continue;  // sft gathers and reduces per decoder layer: the transformer-layer wrap
    else if (word == "offload")
      c.notices.push_back(
          "--fsdp offload has no effect in sft.cpp: parameters and optimizer "
          "state already live in CPU memory");
    else if (word == "hybrid_shard" || word == "hybrid_shard_zero2")
      fail(kComponent, "--fsdp " + word +
                           ": sharding within a node and replicating across nodes is not "
                           "available (hint: full_shard or shard_grad_op shard over every rank)");
    else
      fail(kComponent, "--fsdp: '" + word +
                           "' is not an FSDP option (hint: full_shard, shard_grad_op, no_shard, "
                           "offload, auto_wrap, e.g. --fsdp \"full_shard auto_wrap\")");
    if (stage && c.stage && *stage != *c.stage)
      fail(kComponent, c.source +
                           ": more than one sharding strategy (hint: give one of "
                           "full_shard, shard_grad_op, no_shard)");
    if (stage) c.stage = stage;
  }
  if (any && !c.stage) c.stage = 3;  // accelerate's default sharding strategy is FULL_SHARD
  return c;
}

ShardingChoice zero_stage_of_fsdp_config(const Json& config, const std::string& source,
                                         std::optional<int64_t> fsdp_stage) {
  ShardingChoice c;
  c.source = "--fsdp_config " + source;
  if (!config.is_object())
    fail_in_file(kComponent, {source, "top level"},
                 "an FSDP config is a JSON object, got " + json_type_name(config),
                 "{\"reshard_after_forward\": false}");
  if (!fsdp_stage) {
    if (!config.empty())
      c.notices.push_back("--fsdp_config " + source +
                          " is ignored without --fsdp (as transformers does; hint: --fsdp "
                          "\"full_shard auto_wrap\")");
    return c;
  }
  c.stage = fsdp_stage;
  for (const auto& [raw_key, value] : config.items()) {
    const std::string key = strip_fsdp_prefix(raw_key);
    if (key == "reshard_after_forward") {
      if (!value.is_boolean())
        fail_in_file(kComponent, {source, "key '" + raw_key + "'"},
                     "expected true or false, got " + shown(value),
                     "false keeps the gathered parameters: ZeRO-2");
      if (*c.stage == 3 && !value.get<bool>()) c.stage = 2;  // FSDP2's SHARD_GRAD_OP
      continue;
    }
    if (key == "sharding_strategy") {
      // accelerate's names and numbers (FullyShardedDataParallelPlugin).
      const std::string s = value.is_string()           ? value.get<std::string>()
                            : value.is_number_integer() ? std::to_string(value.get<int64_t>())
                                                        : "";
      if (s == "FULL_SHARD" || s == "1")
        c.stage = 3;
      else if (s == "SHARD_GRAD_OP" || s == "2")
        c.stage = 2;
      else if (s == "NO_SHARD" || s == "3")
        c.stage = 0;
      else
        fail_in_file(kComponent, {source, "key '" + raw_key + "'"},
                     "sharding strategy " + shown(value) + " is not available",
                     "FULL_SHARD, SHARD_GRAD_OP or NO_SHARD");
      continue;
    }
    c.notices.push_back("--fsdp_config " + source + ": key '" + raw_key +
                        "' is ignored (sft.cpp shards per decoder layer, in CPU memory)");
  }
  return c;
}

ShardingChoice zero_stage_of_accelerate_config(const std::string& name) {
  ShardingChoice c;
  c.source = "--accelerate_config " + name;
  if (name == "single_gpu" || name == "multi_gpu" || name == "ddp")
    c.stage = 0;
  else if (name == "zero1")
    c.stage = 1;
  else if (name == "zero2")
    c.stage = 2;
  else if (name == "zero3" || name == "fsdp" || name == "fsdp1" || name == "fsdp2")
    c.stage = 3;
  else
    fail(kComponent, "--accelerate_config " + name +
                         ": not one of TRL's configs sft.cpp maps (hint: single_gpu, multi_gpu, "
                         "zero1, zero2, zero3, fsdp1, fsdp2)");
  return c;
}

}  // namespace sft
