#include "data/loader.h"

#include <numeric>

#include "core/error.h"
#include "core/rng.h"

namespace sft::data {

namespace {
// Separates the shuffle's random stream from other users of the same seed ("shuf" + epoch).
constexpr uint64_t kShuffleStream = 0x7368756600000000ull;
}  // namespace

Loader::Loader(uint64_t num_rows, const LoaderOptions& options)
    : num_rows_(num_rows), options_(options) {
  if (num_rows == 0) fail("data", "the training dataset has no rows");
  if (options.batch_size == 0) fail("data", "per_device_train_batch_size must be at least 1");
  if (options.world_size == 0 || options.rank >= options.world_size)
    fail("data", "rank " + std::to_string(options.rank) + " is outside world size " +
                     std::to_string(options.world_size));
  if (options.drop_last && steps_per_epoch() == 0)
    fail("data", "with drop_last, " + std::to_string(num_rows) +
                     " rows do not fill one global batch of " +
                     std::to_string(uint64_t(options.batch_size) * options.world_size) + " rows");
}

uint64_t Loader::steps_per_epoch() const {
  const uint64_t global = uint64_t(options_.batch_size) * options_.world_size;
  return options_.drop_last ? num_rows_ / global : (num_rows_ + global - 1) / global;
}

std::vector<uint64_t> Loader::epoch_order(uint64_t epoch) const {
  std::vector<uint64_t> order(num_rows_);
  std::iota(order.begin(), order.end(), uint64_t{0});
  if (!options_.shuffle) return order;
  Rng rng(options_.seed, kShuffleStream + epoch);
  for (uint64_t i = num_rows_ - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
  return order;
}

std::vector<uint64_t> Loader::next_batch() {
  if (cached_epoch_ != cursor_.epoch) {
    order_ = epoch_order(cursor_.epoch);
    cached_epoch_ = cursor_.epoch;
  }
  const uint64_t global = uint64_t(options_.batch_size) * options_.world_size;
  const uint64_t first = cursor_.position + uint64_t(options_.rank) * options_.batch_size;
  std::vector<uint64_t> batch;
  batch.reserve(options_.batch_size);
  for (uint64_t k = 0; k < options_.batch_size; ++k)
    batch.push_back(order_[(first + k) % num_rows_]);  // wraps only in the last, short step
  cursor_.position += global;
  if (cursor_.position >= steps_per_epoch() * global) {
    ++cursor_.epoch;
    cursor_.position = 0;
  }
  return batch;
}

void Loader::restore(const LoaderCursor& cursor) {
  const uint64_t global = uint64_t(options_.batch_size) * options_.world_size;
  if (cursor.position % global != 0 || cursor.position >= steps_per_epoch() * global)
    fail("data", "cannot resume at row " + std::to_string(cursor.position) +
                     " of an epoch: it is not the start of a step with " + std::to_string(global) +
                     " rows per step (hint: resume with the same "
                     "per_device_train_batch_size and number of processes)");
  cursor_ = cursor;
}

Json Loader::cursor_to_json() const {
  return {{"epoch", cursor_.epoch},
          {"position", cursor_.position},
          {"num_rows", num_rows_},
          {"seed", options_.seed}};
}

void Loader::restore_from_json(const Json& state) {
  try {
    if (state.at("num_rows").get<uint64_t>() != num_rows_ ||
        state.at("seed").get<uint64_t>() != options_.seed)
      fail("data", "cannot resume the data loader: the checkpoint was saved with " +
                       state.at("num_rows").dump() + " rows and seed " + state.at("seed").dump() +
                       ", this run has " + std::to_string(num_rows_) + " rows and seed " +
                       std::to_string(options_.seed) +
                       " (hint: resume with the same dataset, preparation options and seed)");
    restore({state.at("epoch").get<uint64_t>(), state.at("position").get<uint64_t>()});
  } catch (const Json::exception& e) {
    fail("data", std::string("malformed data loader state in the checkpoint: ") + e.what());
  }
}

}  // namespace sft::data
