// Writing only the held run of a parameter set's values (ParameterSet::hold_only: a ZeRO-3
// rank's shard, optim/zero3.h): the checkpoint loads (model/param_slices.h, the experts'
// model/moe_checkpoint.h) and the random init (Transformer::random) go through here, so the
// pages of the arena outside the run are never touched and a rank never holds more than its
// shard plus one tensor. With the whole arena held (the default) every parameter is written
// whole, exactly as before.
//
// A writer produces elements [part.begin, part.end) of parameter `index` of all() (row-major,
// part as ParameterSet::held_part gives it) at `dst`, which points at element part.begin of
// that parameter's values. Writers that can only produce a whole tensor are wrapped by
// through_scratch: a parameter held in part is written into a scratch of its size and its held
// part copied; one held whole is written in place. The values written are the same bits
// either way, so a sharded rank holds exactly the part of the unsharded values it owns.
#pragma once

#include <cstddef>
#include <functional>

#include "model/parameters.h"

namespace sft::model {

using PartWriter =
    std::function<void(size_t index, const Parameter& p, ElementRun part, float* dst)>;
using WholeWriter = std::function<void(size_t index, const Parameter& p, float* dst)>;

// Every parameter with a held part, in all()'s order, through `write`; the rest are skipped.
void write_held_values(ParameterSet& params, const PartWriter& write);

PartWriter through_scratch(WholeWriter whole);

}  // namespace sft::model
