// The sharding flags of `sft train` resolved into TrainingArgs::zero_stage: --zero_stage,
// --accelerate_config, --fsdp (+ --fsdp_config) and --deepspeed (train/sharding_config.h maps
// each). Every flag that names a stage must name the same one; the stage must be 0–3, and
// ZeRO-3 needs more than one data-parallel rank. Notices for ignored options and keys go to
// args.notices. Throws UsageError naming the flags (and the file) before any work.
#pragma once

#include "train/args.h"

namespace sft {

void resolve_sharding_args(TrainingArgs& args);
// The number of processes this launch trains with: --nproc_per_node (which re-launches under
// mpirun), else what mpirun / a PMI launcher says (as make_comm_from_environment reads it).
int64_t world_size_of_launch(const TrainingArgs& a);

}  // namespace sft
