// The training-row loader: which rows each data-parallel rank trains on, in which order.
//
// Each epoch visits the rows in a permutation drawn from the seed and the epoch number only
// (Fisher-Yates over sft::Rng's counter-based stream), so any epoch's order is reproducible
// without replaying the ones before. A step consumes one global batch of world_size x
// batch_size rows of that order; rank r takes the r-th slice of batch_size rows. When the rows
// left in an epoch do not fill a global batch, it is completed from the start of the same
// epoch's order (so every rank takes the same number of steps, as accelerate's even_batches
// does), or dropped with drop_last.
//
// The cursor (epoch, position = rows of the epoch's order consumed) is all the state: saving
// it with a checkpoint and restoring it resumes the exact same batches.
#pragma once

#include <cstdint>
#include <vector>

#include "io/json.h"

namespace sft::data {

struct LoaderOptions {
  uint64_t seed = 42;
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

  const LoaderCursor& cursor() const { return cursor_; }
  void restore(const LoaderCursor& cursor);

  // {"epoch", "position", "num_rows", "seed"}: restoring checks the dataset and seed match.
  Json cursor_to_json() const;
  void restore_from_json(const Json& state);

 private:
  uint64_t num_rows_;
  LoaderOptions options_;
  LoaderCursor cursor_;
  uint64_t cached_epoch_ = UINT64_MAX;
  std::vector<uint64_t> order_;
};

}  // namespace sft::data
