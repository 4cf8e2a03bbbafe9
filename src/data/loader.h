// The training-row loader: which rows each data-parallel rank trains on, in which order — the
// order TRL 1.16 + transformers 5.24 + accelerate 1.15 visit them in for the same flags.
//
// Order of an epoch (shuffle on, TRL's default --train_sampling_strategy random): the Trainer's
// RandomSampler becomes accelerate's SeedableRandomSampler, which at epoch e reseeds a torch
// CPU generator with manual_seed(seed + e) and yields torch.randperm(num_rows) (see
// core/torch_generator.h); seed = --data_seed when given, else --seed (torch's initial_seed()
// after the Trainer's set_seed(args.seed)). So an epoch's order depends on (seed, epoch) only
// and any epoch can be produced without replaying the ones before. Shuffle off
// (--train_sampling_strategy sequential): 0..num_rows-1 every epoch.
//
// Steps and ranks (accelerate's BatchSamplerShard, split_batches off, even_batches on): a step
// consumes one global batch of world_size x batch_size rows of the epoch's order, and rank r
// takes the r-th slice of batch_size rows, i.e. the r-th of the step's world_size consecutive
// DataLoader batches. Global row position p of the epoch is order[p % num_rows]: when the rows
// left do not fill a global batch, it is completed from the start of the same epoch's order
// (as accelerate does, so every rank takes the same number of steps), or dropped with
// drop_last (transformers' dataloader_drop_last: only whole global batches). With one process
// the caller truncates the last, short batch instead (torch's DataLoader does; see
// Trainer::next_rows).
//
// The cursor (epoch, position = rows of the epoch's order consumed) is all the state: saving it
// with a checkpoint and restoring it resumes the exact same batches (transformers'
// skip_first_batches replays the same epoch order, so a resumed TRL run agrees too).
// Checkpoints from before TRL's order (no "order" in the saved state) resume with the shuffle
// they were started with (sft's earlier Philox Fisher-Yates), so they stay bit-exact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/json.h"

namespace sft::data {

struct LoaderOptions {
  uint64_t seed = 42;  // data_seed, or seed when data_seed is unset
  bool shuffle = true;
  uint32_t batch_size = 8;  // per_device_train_batch_size
  uint32_t rank = 0;
  uint32_t world_size = 1;
  bool drop_last = false;
};

struct LoaderCursor {
  uint64_t epoch = 0;
  uint64_t position = 0;
  bool operator==(const LoaderCursor&) const = default;
};

// How an epoch's rows are ordered; saved with the cursor so a resume cannot mix them.
enum class LoaderOrder {
  sequential,      // 0..n-1
  torch_randperm,  // TRL's: torch.randperm(n) with manual_seed(seed + epoch)
  sft_philox_v1,   // sft before TRL's order: Fisher-Yates over sft::Rng (old checkpoints only)
};

class Loader {
 public:
  // Throws "[data] ..." for an empty dataset, batch_size 0 or rank >= world_size.
  Loader(uint64_t num_rows, const LoaderOptions& options);

  // This rank's rows for the next step; advances the cursor (to the next epoch at the end).
  std::vector<uint64_t> next_batch();

  // Steps in one epoch (the same on every rank).
  uint64_t steps_per_epoch() const;
  // The order rows are visited in during `epoch`.
  std::vector<uint64_t> epoch_order(uint64_t epoch) const;
  LoaderOrder order() const { return order_kind_; }

  const LoaderCursor& cursor() const { return cursor_; }
  void restore(const LoaderCursor& cursor);

  // {"epoch", "position", "num_rows", "seed", "order"}: restoring checks the dataset, seed and
  // order kind match (a state without "order" is from before TRL's order, see above).
  Json cursor_to_json() const;
  void restore_from_json(const Json& state);

 private:
  uint64_t num_rows_;
  LoaderOptions options_;
  LoaderOrder order_kind_;
  LoaderCursor cursor_;
  uint64_t cached_epoch_ = UINT64_MAX;
  std::vector<uint64_t> order_;
};

const char* loader_order_name(LoaderOrder order);

}  // namespace sft::data
