// Tensor parallelism's way out: the whole model and the whole optimizer state assembled from
// every rank's slices (model/param_slices.h's gather_blocks), for the files a run writes —
// checkpoints and the final export — which are always those of an unsplit (tp = 1) run, so
// that they load into transformers and resume with any tp size.
//
// Both are collectives over the model's tensor-parallel group: every rank of `group` calls
// them, in the same order. Group rank 0 gets the whole object, the other ranks nothing. The
// work is per tensor, so the extra memory is the whole object on rank 0 plus one tensor (two
// on the other ranks: a whole-size receive buffer and the gather's own).
#pragma once

#include <optional>

#include "core/shard_group.h"
#include "model/transformer.h"
#include "optim/adamw.h"

namespace sft {

// A whole (tp = 1) Transformer with local's config and compute dtype (bf16 copies refreshed)
// whose weights are bit for bit the slices' values. `local` is a rank's slice model over
// `group` (its tensor_parallel() rank and size); LoRA models are not split, so not accepted.
std::optional<model::Transformer> gather_full_model(const model::Transformer& local,
                                                    ShardGroup& group);

// The whole AdamW of the unsplit model: exp_avg / exp_avg_sq in the whole model's
// parameters() order, options and steps_taken copied. `local_optimizer`'s moments follow
// local.trainable() order (a ZeRO-1 run gathers its dp shards into such an AdamW first).
std::optional<AdamW> gather_full_moments(const model::Transformer& local,
                                         const AdamW& local_optimizer, ShardGroup& group);

}  // namespace sft
