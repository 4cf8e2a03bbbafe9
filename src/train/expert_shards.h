// ExpertShards: the trainer's side of expert parallelism (--ep_size P, model/expert_parallel.h).
// The data-parallel ranks form groups of P adjacent ranks (`ep`); rank q of a group owns
// experts [q·E/P, (q+1)·E/P) of every expert layer; the ranks with the same q across the groups
// form the expert-data-parallel group (`expert_dp`). Over the flat arenas (every rank keeps the
// whole layout, see expert_parallel.h) that makes three kinds of runs:
//   shared  every parameter that is not an expert stack (attention, router, norms, embedding,
//           head): data parallel as without experts — gradients summed over all DP ranks;
//   own     this rank's experts' blocks of the stacks (and of gpt-oss's expert biases): their
//           gradients hold every token of the EP group routed to them, summed over expert_dp;
//   other   the rest of the stacks: no gradient here, never stepped (the optimizer's slices
//           leave them out, so weight decay and the moments never touch them).
// The gradient norm counts every parameter once: the shared squares (equal on every rank) plus
// the own squares summed over the EP group. Under tensor parallelism (--tp_size) each TP rank
// runs its own EP groups over its data-parallel group; the experts are never split over TP
// ranks (every TP rank holds the same own experts and gradients), so only the shared squares
// need the TP count, which the caller supplies. A checkpoint, an evaluation and the export need
// the whole experts: gather_experts brings every stack whole onto every rank of the group, a
// tensor at a time (an all-gather whose shard layout is the experts' blocks), with their
// moments for a checkpoint; the copies of other ranks' experts are then only read by those
// (an evaluation runs with the exchange paused, on the whole model).
// Memory: the arenas keep the whole layout, but the other ranks' expert blocks hold zeros with
// their pages handed back to the OS (release_others, core/page_release.h, as ZeRO's non-own
// shards, optim/zero_memory.h): after the load, and again after each gather for a checkpoint or
// an evaluation. Nothing of a step writes them (the owner's GEMMs and biases touch only experts
// with rows, the optimizer steps own_slices, zero_gradients clears only the shared and own
// runs), so a rank's parameters, gradients and moments occupy the shared parameters and its own
// experts only.
// Every sum has a fixed order (parallel/comm.h), so a layout gives the same bits every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/param_slice.h"
#include "model/parameters.h"
#include "parallel/comm.h"

namespace sft {

class ExpertShards {
 public:
  // Every Comm must outlive this. Throws "[train] ..." when the experts do not divide by the
  // EP group's size.
  ExpertShards(const model::ParameterSet& params, int64_t experts, Comm& dp, Comm& ep,
               Comm& expert_dp);

  // The optimizer's slices less the other ranks' expert blocks.
  std::vector<ParamSlice> own_slices(std::span<const ParamSlice> slices) const;
  // Gradients summed: shared runs over the DP ranks, own runs over expert_dp.
  void reduce_gradients(std::span<float> grads);
  // The gradients cleared for the next step: the shared and own runs (the others hold zeros
  // already, and clearing them would fault their pages back in).
  void zero_gradients(std::span<float> grads) const;
  // The gradient norm over the whole model (after reduce_gradients), the same on every rank.
  // shared_sq: the shared parameters' sum of squares over the whole model when the caller
  // counts it (tensor parallelism: each rank holds slices); absent, this rank's shared runs.
  double grad_norm(std::span<const float> grads, std::optional<double> shared_sq = {});
  // The runs of the flat arena that are not expert stacks.
  std::span<const ShardRange> shared_runs() const { return shared_; }
  // Every expert stack whole on every rank of the EP group (values; with `moments` also the
  // AdamW moments exp_avg and exp_avg_sq, arrays of the arena's layout).
  void gather_experts(std::span<float> values, std::span<float> exp_avg = {},
                      std::span<float> exp_avg_sq = {});
  // The other ranks' expert blocks of an arena of the layout (fp32 values, gradients or
  // moments; bf16 copies) zeroed with their pages released. Host memory; an empty span is
  // skipped.
  void release_others(std::span<float> arena) const;
  void release_others(std::span<uint16_t> arena) const;
  // Bytes of the other ranks' expert blocks in an fp32 arena of the layout.
  size_t other_experts_bytes() const;

 private:
  std::vector<ShardRange> shared_, own_, others_, stacks_;  // runs of the flat arena
  Comm& dp_;
  Comm& ep_;
  Comm& expert_dp_;
};

}  // namespace sft
