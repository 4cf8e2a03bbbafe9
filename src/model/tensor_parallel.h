// Tensor parallelism as the model sees it: which rank of how many this process is, the group
// the slices combine through, and the checks a config must pass.
//
// Megatron's split (model/param_layout.h names each parameter's split dimension):
//   column-parallel (output features split): q, k, v, gate, up and their biases — each rank
//     computes whole heads (H/T query heads, Hkv/T kv heads) and I/T of the MLP;
//   row-parallel (input features split): o, down — partial outputs, summed over the group
//     (one all-reduce each), their biases added once after the sum;
//   vocabulary-parallel: the embedding table and the LM head — ceil(V/T) rows each; the
//     embedding output and the LM head's cross-entropy statistics are combined over the group;
//   replicated: the norms. The layer norms' gradients are identical on every rank; q_norm and
//     k_norm act on each rank's own heads, so their gradients are partial sums that the
//     trainer adds up over the group once per step (ParamSpec::tp_partial_grad);
//   replicated too: a mixture of experts' router and expert stacks (and their biases) — every
//     rank runs the expert layer whole on the whole hidden state, so neither its output nor its
//     input gradient needs a sum (--ep_size splits the experts over data-parallel ranks).
// Heads, kv heads and the intermediate size must divide by T. The vocabulary need not: as
// Megatron pads it, every rank holds ceil(V/T) rows and those past V are padding — zero, never
// a target, never the argmax, no gradient, never in a checkpoint or the export (Qwen3's 151936
// rows over T = 3, or any odd vocabulary over 2). Rank r holds the r-th of T equal blocks along
// the split dimension (ParamSpec::tp_real counts the block's real entries).
#pragma once

#include <string>

#include "core/shard_group.h"
#include "model/config.h"

namespace sft::model {

struct TensorParallel {
  int rank = 0;
  int size = 1;
  ShardGroup* group = nullptr;  // null when size == 1
  bool on() const { return size > 1; }
  static TensorParallel of(ShardGroup* group) {
    return group ? TensorParallel{group->rank(), group->size(), group} : TensorParallel{};
  }
};

// Throws "[model] ..." naming the config field, its value and `where` (the flag or file)
// when the config cannot be split over `size` ranks.
void check_tensor_parallel(const ModelConfig& config, int size, const std::string& where);

}  // namespace sft::model
