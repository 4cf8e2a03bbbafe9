// ZeRO-3 (DeepSpeed stage 3, FSDP's FULL_SHARD) over the data-parallel ranks: on top of
// ZeRO-2 (optim/zero2.h), each rank keeps only its own shard of the decoder layers'
// parameters. A layer's weights (fp32 masters and, under bf16 compute, their bf16 copies) are
// all-gathered just before its forward and again just before its backward, and freed right
// after each (the non-own parts zeroed, their pages handed back: optim/zero_memory.h). The
// optimizer updates the own shard only; nothing is all-gathered after the step except the
// parameters outside the layers (embedding, final norm, LM head), which stay whole on every
// rank: they are used at both ends of every pass.
//
// Layout: the model's arenas keep their full size in address space, only the pages of the
// own shard, of the parameters outside the layers and of the layer in use are resident.
// Gathers are not overlapped with compute (Comm has no asynchronous collectives), so the
// next layer's gather starts when this one's pass is done.
//
// Checkpoints, the export and evaluation gather the whole model first (gather_everything)
// and free it again after (release_layers): the files are the same as without sharding, so a
// checkpoint resumes with or without ZeRO, and every rank briefly holds the whole model then
// (evaluation: ranks score different numbers of batches, so per-layer gathers would not pair
// up). The model is loaded whole on every rank and freed when training starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "parallel/comm.h"

namespace sft {

class Zero3Params {
 public:
  // layer_ranges[l]: decoder layer l's run of the flat arena (zero2.h's layer_runs).
  Zero3Params(size_t num_params, std::vector<ShardRange> layer_ranges, Comm& dp);

  // values: the fp32 masters; bf16: the bf16 arena (same offsets) or empty.
  void gather_layer(std::span<float> values, std::span<uint16_t> bf16, int64_t layer);
  void release_layer(std::span<float> values, std::span<uint16_t> bf16, int64_t layer);
  // Every layer freed (the start of training, after a save); every layer gathered (a save,
  // the export).
  void release_layers(std::span<float> values, std::span<uint16_t> bf16);
  void gather_everything(std::span<float> values, std::span<uint16_t> bf16);
  // After the optimizer step on the own shard: the parameters outside the layers, whole again.
  void gather_outside_layers(std::span<float> values, std::span<uint16_t> bf16);
  // Whether the layers are freed now (between gather_everything and release_layers: no).
  bool sharded() const { return sharded_; }

 private:
  void check(std::span<float> values, std::span<uint16_t> bf16) const;
  void release(std::span<float> values, std::span<uint16_t> bf16, ShardRange range);

  Comm& dp_;
  size_t num_params_;
  ShardRange shard_;
  std::vector<ShardRange> layers_;
  std::vector<ShardRange> outside_;  // the gaps between the layers' runs
  bool sharded_ = false;
};

}  // namespace sft
