// ZeRO-3 (DeepSpeed stage 3, FSDP's FULL_SHARD) over the data-parallel ranks: on top of
// ZeRO-2 (optim/zero2.h), each rank keeps only its own shard of the parameters. A decoder
// layer's weights (fp32 masters and, under bf16 compute, their bf16 copies) are all-gathered
// just before its forward and again just before its backward, and freed right after each (the
// non-own parts zeroed, their pages handed back: optim/zero_memory.h). The runs outside the
// layers that a pass uses at one point each, the embedding and the LM head ("per-use runs"),
// are sharded too: gathered just before the lookup and before the fused LM head + loss, freed
// after (a tied table is one run, gathered for each use). Without tensor parallelism the trainer
// gathers neither whole: the lookup fetches only its rows (optim/zero3_rows.h) and an fp32 head
// reads its weight a vocabulary block at a time (optim/zero3_head.h); gather_run then serves a
// bf16 head's copy only. The optimizer updates the own shard
// only; after the step only the runs kept whole (what is neither a layer nor a per-use run:
// the final norm) are all-gathered again. The values a pass reads are the owners' either way,
// so the results are the same bits as with those runs kept whole.
//
// Layout: the model's arenas keep their full size in address space, only the pages of the
// own shard, of the runs kept whole and of what is in use are resident. The next layer's
// gather is in flight while this one computes: gather_layer(l, next) starts next's
// (Comm::all_gather_start, MPI_Iallgatherv) once l is whole, and gather_layer(next) completes
// it; so two layers are resident at the peak. The bytes moved are the same as the blocking
// gather's, so the results are the same bits. The per-use runs' gathers are blocking.
//
// Loading: a rank reads or draws only its shard of the model (ParameterSet::hold_only,
// model/held_values.h: the shard is dp.my_shard's), so no rank ever holds the whole model;
// training starts with release_layers then gather_kept_whole, which also serves a model loaded
// whole (LoRA's adapters).
//
// Checkpoints and the export are written a tensor at a time (gather_range / release_range,
// driven by optim/zero_stream.h): the files are the same as without sharding, so a checkpoint
// resumes with or without ZeRO, and no rank holds more than its shard plus one tensor.
// Evaluation and tensor parallelism (whose checkpoints assemble the tp slices on one rank)
// still gather the whole model first (gather_everything) and free it again after
// (release_layers): ranks score different numbers of eval batches, so per-layer gathers
// would not pair up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "parallel/comm.h"

namespace sft {

class Zero3Params {
 public:
  // layer_ranges[l]: decoder layer l's run of the flat arena (zero2.h's layer_runs); per_use:
  // runs outside the layers gathered per use (gather_run), each one parameter's (the embedding,
  // an untied LM head), duplicates allowed (a tied table named as both).
  Zero3Params(size_t num_params, std::vector<ShardRange> layer_ranges, Comm& dp,
              std::vector<ShardRange> per_use = {});

  // values: the fp32 masters; bf16: the bf16 arena (same offsets) or empty. next: the layer
  // whose pass comes after this one's (l + 1 in a forward, l - 1 in a backward; -1 none), its
  // gather started before returning. A layer started and never asked for is completed and
  // freed by the next call here.
  void gather_layer(std::span<float> values, std::span<uint16_t> bf16, int64_t layer,
                    int64_t next = -1);
  void release_layer(std::span<float> values, std::span<uint16_t> bf16, int64_t layer);
  // A per-use run whole, and freed again, in the forms given (values or bf16 empty: not that
  // form; the lookup reads the fp32 table, a head computing in bf16 only its bf16 copy). A form
  // already whole is not gathered again (a tied fp32 table is held from the lookup to an fp32
  // head: the peak, at the head, holds it anyway), nor is one already freed released. Every
  // rank calls them for the same runs.
  void gather_run(std::span<float> values, std::span<uint16_t> bf16, ShardRange run);
  void release_run(std::span<float> values, std::span<uint16_t> bf16, ShardRange run);
  // Every sharded run freed (the start of training, after a save); every one gathered (a save,
  // the export, evaluation).
  void release_layers(std::span<float> values, std::span<uint16_t> bf16);
  void gather_everything(std::span<float> values, std::span<uint16_t> bf16);
  // The runs kept whole (neither a layer's nor a per-use run), whole again: after the
  // optimizer step on the own shard, and at the start of training (a rank loaded only its
  // shard of them).
  void gather_kept_whole(std::span<float> values, std::span<uint16_t> bf16);
  // The fp32 values of [begin, end) whole (a tensor a checkpoint or the export writes), and
  // freed again: only the parts inside sharded runs move, the rest is whole anyway. Every
  // rank calls them for the same ranges; no-ops while not sharded().
  void gather_range(std::span<float> values, size_t begin, size_t end);
  void release_range(std::span<float> values, size_t begin, size_t end);
  // Whether the sharded runs are freed now (between gather_everything and release_layers: no).
  bool sharded() const { return sharded_; }
  ShardRange shard() const { return shard_; }

 private:
  void check(std::span<float> values, std::span<uint16_t> bf16) const;
  void release(std::span<float> values, std::span<uint16_t> bf16, ShardRange range);
  void release_bf16(std::span<uint16_t> bf16, ShardRange range);
  void check_run_forms(std::span<float> values, std::span<uint16_t> bf16) const;
  bool has_layer(int64_t l) const { return l >= 0 && static_cast<size_t>(l) < layers_.size(); }
  // The index of `run` in per_use_ (fails when it is none of them).
  size_t per_use_index(ShardRange run) const;
  // The gather in flight completed; `free` also releases that layer again.
  void settle(bool free);

  Comm& dp_;
  size_t num_params_;
  ShardRange shard_;
  std::vector<ShardRange> layers_;
  std::vector<ShardRange> per_use_;  // sorted, without duplicates
  // Per per-use run and form: gathered by gather_run and not released since.
  std::vector<bool> whole_f32_, whole_bf16_;
  std::vector<ShardRange> sharded_runs_;  // layers_ and per_use_
  std::vector<ShardRange> kept_whole_;    // the gaps between them
  bool sharded_ = false;
  // The layer whose gather is in flight (-1: none), its requests and arenas.
  int64_t in_flight_ = -1;
  std::unique_ptr<Comm::Pending> pending_values_, pending_bf16_;
  std::span<float> in_flight_values_;
  std::span<uint16_t> in_flight_bf16_;
};

}  // namespace sft
