#include "data/loader.h"

#include <numeric>

#include "core/error.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/torch_generator.h"

namespace sft::data {

namespace {
// sft_philox_v1's stream ("shuf" + epoch), kept so that checkpoints from before TRL's order
// resume with the rows they started with.
constexpr uint64_t kShuffleStream = 0x7368756600000000ull;

LoaderOrder order_for(const LoaderOptions& o) {
  return o.shuffle ? LoaderOrder::torch_randperm : LoaderOrder::sequential;
}

LoaderOrder parse_order(const std::string& name) {
  for (LoaderOrder o :
       {LoaderOrder::sequential, LoaderOrder::torch_randperm, LoaderOrder::sft_philox_v1})
    if (name == loader_order_name(o)) return o;
  fail("data", "cannot resume the data loader: the checkpoint's data order '" + name +
                   "' is unknown to this version of sft (hint: resume with the sft that saved it)");
}
}  // namespace

const char* loader_order_name(LoaderOrder order) {
  switch (order) {
    case LoaderOrder::sequential:
      return "sequential";
    case LoaderOrder::torch_randperm:
      return "torch_randperm";
    case LoaderOrder::sft_philox_v1:
      return "sft_philox_v1";
  }
  return "?";
}

Loader::Loader(uint64_t num_rows, const LoaderOptions& options)
    : num_rows_(num_rows), options_(options), order_kind_(order_for(options)) {
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
  switch (order_kind_) {
    case LoaderOrder::torch_randperm: {
      // SeedableRandomSampler: manual_seed(initial_seed + epoch), then randperm. Python's
      // unbounded sum and uint64_t's wrap agree on the low 32 bits, all torch keeps.
      TorchGenerator gen(options_.seed + epoch);
      return torch_randperm(num_rows_, gen);
    }
    case LoaderOrder::sft_philox_v1: {
      std::vector<uint64_t> order(num_rows_);
      std::iota(order.begin(), order.end(), uint64_t{0});
      Rng rng(options_.seed, kShuffleStream + epoch);
      for (uint64_t i = num_rows_ - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
      return order;
    }
    case LoaderOrder::sequential:
      break;
  }
  std::vector<uint64_t> order(num_rows_);
  std::iota(order.begin(), order.end(), uint64_t{0});
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
          {"seed", options_.seed},
          {"order", loader_order_name(order_kind_)}};
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
    // A state without "order" predates TRL's order: a shuffled run then used sft_philox_v1.
    const LoaderOrder wanted = order_for(options_);
    const LoaderOrder saved =
        state.contains("order")
            ? parse_order(state.at("order").get<std::string>())
            : (options_.shuffle ? LoaderOrder::sft_philox_v1 : LoaderOrder::sequential);
    const bool legacy_shuffle = saved == LoaderOrder::sft_philox_v1 && options_.shuffle;
    if (saved != wanted && !legacy_shuffle)
      fail("data",
           std::string("cannot resume the data loader: the checkpoint was saved with the ") +
               loader_order_name(saved) + " data order, this run uses " +
               loader_order_name(wanted) +
               " (hint: resume with the same --train_sampling_strategy)");
    restore({state.at("epoch").get<uint64_t>(), state.at("position").get<uint64_t>()});
    if (saved != order_kind_) {
      log_warn(
          "resuming a checkpoint saved before sft followed TRL's data order: it keeps "
          "the shuffle it started with (new runs visit rows in TRL's order)");
      order_kind_ = saved;
      cached_epoch_ = UINT64_MAX;
    }
  } catch (const Json::exception& e) {
    fail("data", std::string("malformed data loader state in the checkpoint: ") + e.what());
  }
}

}  // namespace sft::data
