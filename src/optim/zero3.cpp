#include "optim/zero3.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "optim/zero_memory.h"

namespace sft {

Zero3Params::Zero3Params(size_t num_params, std::vector<ShardRange> layer_ranges, Comm& dp)
    : dp_(dp),
      num_params_(num_params),
      shard_(dp.my_shard(num_params)),
      layers_(std::move(layer_ranges)),
      outside_(runs_outside_layers(layers_, num_params, "ZeRO-3")) {
  if (std::none_of(layers_.begin(), layers_.end(),
                   [](const ShardRange& r) { return r.size() > 0; }))
    fail("optim", "ZeRO-3 needs each decoder layer's parameters in one run of the arena");
}

void Zero3Params::check(std::span<float> values, std::span<uint16_t> bf16) const {
  if (values.size() != num_params_ || (!bf16.empty() && bf16.size() != num_params_))
    fail("optim", "ZeRO-3 was built for " + std::to_string(num_params_) + " parameters, given " +
                      std::to_string(values.size()));
}

void Zero3Params::settle(bool free) {
  if (in_flight_ < 0) return;
  dp_.wait(pending_values_);
  dp_.wait(pending_bf16_);
  if (free) release(in_flight_values_, in_flight_bf16_, layers_[static_cast<size_t>(in_flight_)]);
  in_flight_ = -1;
}

void Zero3Params::gather_layer(std::span<float> values, std::span<uint16_t> bf16, int64_t l,
                               int64_t next) {
  check(values, bf16);
  if (!sharded_ || !has_layer(l)) return;
  if (in_flight_ == l) {
    settle(false);
  } else {
    settle(true);
    const ShardRange r = layers_[static_cast<size_t>(l)];
    dp_.all_gather(values, r.begin, r.end);
    if (!bf16.empty()) dp_.all_gather(bf16, r.begin, r.end);
  }
  if (!has_layer(next) || next == l) return;
  const ShardRange n = layers_[static_cast<size_t>(next)];
  pending_values_ = dp_.all_gather_start(values, n.begin, n.end);
  if (!bf16.empty()) pending_bf16_ = dp_.all_gather_start(bf16, n.begin, n.end);
  in_flight_ = next;
  in_flight_values_ = values;
  in_flight_bf16_ = bf16;
}

void Zero3Params::release(std::span<float> values, std::span<uint16_t> bf16, ShardRange r) {
  if (dp_.size() == 1 || r.size() == 0) return;
  const size_t own_lo = std::clamp(shard_.begin, r.begin, r.end);
  const size_t own_hi = std::clamp(shard_.end, r.begin, r.end);
  zero_and_release(values.data() + r.begin, (own_lo - r.begin) * sizeof(float));
  zero_and_release(values.data() + own_hi, (r.end - own_hi) * sizeof(float));
  if (bf16.empty()) return;
  zero_and_release(bf16.data() + r.begin, (own_lo - r.begin) * sizeof(uint16_t));
  zero_and_release(bf16.data() + own_hi, (r.end - own_hi) * sizeof(uint16_t));
}

void Zero3Params::release_layer(std::span<float> values, std::span<uint16_t> bf16, int64_t l) {
  check(values, bf16);
  if (!sharded_ || !has_layer(l)) return;
  if (in_flight_ == l) settle(false);
  release(values, bf16, layers_[static_cast<size_t>(l)]);
}

void Zero3Params::release_layers(std::span<float> values, std::span<uint16_t> bf16) {
  check(values, bf16);
  settle(false);
  for (const ShardRange& r : layers_) release(values, bf16, r);
  sharded_ = true;
}

void Zero3Params::gather_everything(std::span<float> values, std::span<uint16_t> bf16) {
  check(values, bf16);
  if (!sharded_) return;
  settle(false);
  for (const ShardRange& r : layers_) {
    dp_.all_gather(values, r.begin, r.end);
    if (!bf16.empty()) dp_.all_gather(bf16, r.begin, r.end);
  }
  sharded_ = false;
}

void Zero3Params::gather_outside_layers(std::span<float> values, std::span<uint16_t> bf16) {
  check(values, bf16);
  for (const ShardRange& r : outside_) {
    dp_.all_gather(values, r.begin, r.end);
    if (!bf16.empty()) dp_.all_gather(bf16, r.begin, r.end);
  }
}

// A tensor lies inside one layer's run or outside all of them; a range across runs is cut.
void Zero3Params::gather_range(std::span<float> values, size_t begin, size_t end) {
  check(values, {});
  if (!sharded_) return;
  settle(true);
  for (const ShardRange& r : layers_) {
    const size_t lo = std::max(r.begin, begin), hi = std::min(r.end, end);
    if (lo < hi) dp_.all_gather(values, lo, hi);
  }
}

void Zero3Params::release_range(std::span<float> values, size_t begin, size_t end) {
  check(values, {});
  if (!sharded_) return;
  settle(true);
  for (const ShardRange& r : layers_) {
    const size_t lo = std::max(r.begin, begin), hi = std::min(r.end, end);
    if (lo < hi) release(values, {}, {lo, hi});
  }
}

}  // namespace sft
