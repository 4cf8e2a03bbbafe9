// The whole model from its tensor-parallel slices, for output (lead's interim version; the
// slices helper owns this file).
#pragma once

#include <optional>

#include "core/shard_group.h"
#include "model/transformer.h"

namespace sft {

// A collective over `group`: on group rank 0 the whole (tp = 1) model, values bit-identical
// to the slices, same compute dtype; nothing on the other ranks.
std::optional<model::Transformer> gather_full_model(const model::Transformer& local,
                                                    ShardGroup& group);

}  // namespace sft
