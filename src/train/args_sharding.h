// The sharding flags of `sft train` resolved into TrainingArgs::zero_stage: --zero_stage,
// --accelerate_config, --fsdp (+ --fsdp_config) and --deepspeed (train/sharding_config.h maps
// each). Every flag that names a stage must name the same one; the stage must be 0–3, and
// ZeRO-3 needs more than one data-parallel rank. Notices for ignored options and keys go to
// args.notices. Throws UsageError naming the flags (and the file) before any work.
#pragma once

#include "train/args.h"

namespace sft {

void resolve_sharding_args(TrainingArgs& args);

}  // namespace sft
