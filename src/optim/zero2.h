// ZeRO-2 (DeepSpeed stage 2) over the data-parallel ranks: on top of ZeRO-1's sharded Adam
// moments (optim/zero1.h), each rank keeps only its own shard of the gradients. A decoder
// layer's gradients are reduce-scattered as soon as its backward is done (the model's layer
// hook) and the rest of the arena (embedding, final norm, LM head: the parameters outside the
// layers) after the whole backward, except what reduce_early took sooner (ZeRO-3's LM head, a
// vocabulary block at a time); each micro-batch is reduced this way, so no full-size gradient
// survives a micro-batch.
//
// The shard accumulates in place, in the own range of the model's gradient arena: before a
// micro-batch's backward the arena holds the global sum so far in the own shard and zeros
// elsewhere; the backward adds this rank's local gradient everywhere; the reduce-scatter of
// a range leaves sum-so-far + Σ over ranks of this micro-batch's gradient in the own part
// (the other ranks contribute zeros plus their local gradient there), and the other ranks'
// parts are zeroed again with their pages released (optim/zero_memory.h).
//
// Memory: the arena keeps its full size in address space, but between micro-batches only the
// own shard's pages (4 bytes × P / dp) are resident; during a backward, those plus the
// layers whose gradients are being written and the parameters outside the layers (whose
// gradients the LM head writes in the forward). The first zero-fill of the arena touches all
// of it once (a peak before the first step). Reduce-scatters are not overlapped with compute
// (Comm has no asynchronous reduction).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "parallel/comm.h"

namespace sft {

class Zero2Grads {
 public:
  // layer_ranges[l]: the run of the flat arena holding decoder layer l's parameters (empty
  // when it has none); runs must not overlap. Everything outside them is reduced by
  // finish_micro_batch. With no layer ranges the whole arena is reduced there.
  Zero2Grads(size_t num_params, std::vector<ShardRange> layer_ranges, Comm& dp);

  // Layer l's backward is done (every rank calls it for the same layers).
  void layer_done(std::span<float> grads, int64_t layer);
  // A range outside the layers whose gradient is complete before the backward ends (the LM
  // head's, a vocabulary block at a time as the fused head finishes it: optim/zero3_head.h):
  // reduced now, in one collective, and left out of this micro-batch's finish. Except the
  // pieces `later` (inside range, ascending; a tied table's rows the lookup's gradient is
  // still to be added to): they keep their local values (saved and put back around the
  // reduction), and the finish reduces them all in one packed collective. Every rank calls it
  // with the same ranges and pieces, in ascending order or at least not overlapping.
  // from (range.size() elements, or empty: the arena itself) holds the range's values in a
  // buffer instead, the arena's range untouched so far: reduced there, and only the own part
  // (and the pieces left for later) written into the arena, whose other parts stay released.
  void reduce_early(std::span<float> grads, ShardRange range,
                    std::span<const ShardRange> later = {}, std::span<float> from = {});
  // After a micro-batch's backward: reduces what the layers and reduce_early did not cover.
  void finish_micro_batch(std::span<float> grads);
  // Before the next step's first micro-batch: the own shard zeroed (the rest already is).
  void zero_own(std::span<float> grads);
  // Right after the arena is allocated (zero-filled): hands the non-own pages back.
  void release_others(std::span<float> grads);
  ShardRange shard() const { return shard_; }

 private:
  void reduce(std::span<float> grads, ShardRange range);
  void reduce_later(std::span<float> grads);
  void check(std::span<float> grads) const;

  Comm& dp_;
  size_t num_params_;
  ShardRange shard_;
  std::vector<ShardRange> layers_;
  std::vector<ShardRange> rest_;   // the gaps between the layers' runs
  std::vector<ShardRange> early_;  // reduced early this micro-batch, ascending
  std::vector<ShardRange> later_;  // their pieces left to the finish
  std::vector<float> scratch_;     // those pieces' values, saved or packed
};

// The runs of the flat arena that hold each decoder layer's parameters, from every
// parameter's (layer, offset, size); empty when some layer's parameters are not one run
// free of other parameters (then ZeRO-2 reduces after the whole backward instead).
struct ParamPlace {
  int layer;  // -1: outside the decoder layers
  size_t offset, size;
};
std::vector<ShardRange> layer_runs(std::span<const ParamPlace> params, int64_t num_layers);

}  // namespace sft
