// Fuzz target: any bytes as a --deepspeed or --fsdp_config JSON, or as --fsdp's words, must
// map onto a ZeRO stage 0–3 or raise sft::Error — never crash or accept a stage outside 0–3.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "train/sharding_config.h"

namespace {

void check(const sft::ShardingChoice& c) {
  if (c.stage && (*c.stage < 0 || *c.stage > 3)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const sft::Json j = sft::parse_json_strict(text, "args", "fuzz-input");
    try {
      check(sft::zero_stage_of_deepspeed(j, "fuzz-input"));
    } catch (const sft::Error&) {
    }
    for (const std::optional<int64_t> fsdp :
         {std::optional<int64_t>(), std::optional<int64_t>(3), std::optional<int64_t>(2)}) {
      try {
        check(sft::zero_stage_of_fsdp_config(j, "fuzz-input", fsdp));
      } catch (const sft::Error&) {
      }
    }
  } catch (const sft::Error&) {
    // Not JSON: refused with the line and column.
  }
  try {
    check(sft::zero_stage_of_fsdp(text));
  } catch (const sft::Error&) {
  }
  return 0;
}
