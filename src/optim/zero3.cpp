#include "optim/zero3.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "optim/zero_memory.h"

namespace sft {

namespace {

bool same_run(const ShardRange& a, const ShardRange& b) {
  return a.begin == b.begin && a.end == b.end;
}

}  // namespace

Zero3Params::Zero3Params(size_t num_params, std::vector<ShardRange> layer_ranges, Comm& dp,
                         std::vector<ShardRange> per_use)
    : dp_(dp),
      num_params_(num_params),
      shard_(dp.my_shard(num_params)),
      layers_(std::move(layer_ranges)),
      per_use_(std::move(per_use)) {
  if (std::none_of(layers_.begin(), layers_.end(),
                   [](const ShardRange& r) { return r.size() > 0; }))
    fail("optim", "ZeRO-3 needs each decoder layer's parameters in one run of the arena");
  std::erase_if(per_use_, [](const ShardRange& r) { return r.size() == 0; });
  std::sort(per_use_.begin(), per_use_.end(),
            [](const ShardRange& a, const ShardRange& b) { return a.begin < b.begin; });
  per_use_.erase(std::unique(per_use_.begin(), per_use_.end(), same_run), per_use_.end());
  whole_f32_.assign(per_use_.size(), false);
  whole_bf16_.assign(per_use_.size(), false);
  sharded_runs_ = layers_;
  sharded_runs_.insert(sharded_runs_.end(), per_use_.begin(), per_use_.end());
  // Also checks that the per-use runs overlap neither the layers nor each other.
  kept_whole_ = runs_outside_layers(sharded_runs_, num_params_, "ZeRO-3");
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
  if (!bf16.empty()) release_bf16(bf16, r);
}

void Zero3Params::release_bf16(std::span<uint16_t> bf16, ShardRange r) {
  if (dp_.size() == 1 || r.size() == 0) return;
  const size_t own_lo = std::clamp(shard_.begin, r.begin, r.end);
  const size_t own_hi = std::clamp(shard_.end, r.begin, r.end);
  zero_and_release(bf16.data() + r.begin, (own_lo - r.begin) * sizeof(uint16_t));
  zero_and_release(bf16.data() + own_hi, (r.end - own_hi) * sizeof(uint16_t));
}

void Zero3Params::release_layer(std::span<float> values, std::span<uint16_t> bf16, int64_t l) {
  check(values, bf16);
  if (!sharded_ || !has_layer(l)) return;
  if (in_flight_ == l) settle(false);
  release(values, bf16, layers_[static_cast<size_t>(l)]);
}

size_t Zero3Params::per_use_index(ShardRange run) const {
  for (size_t i = 0; i < per_use_.size(); ++i)
    if (same_run(per_use_[i], run)) return i;
  fail("optim", "ZeRO-3: [" + std::to_string(run.begin) + ", " + std::to_string(run.end) +
                    ") is not one of the runs gathered per use");
}

// Each form separately: the lookup reads the fp32 table, a bf16 head only its bf16 copy.
void Zero3Params::gather_run(std::span<float> values, std::span<uint16_t> bf16, ShardRange run) {
  check_run_forms(values, bf16);
  const size_t i = per_use_index(run);
  if (!sharded_) return;
  const bool f32 = !values.empty() && !whole_f32_[i], h = !bf16.empty() && !whole_bf16_[i];
  if (!f32 && !h) return;
  settle(true);
  if (f32) dp_.all_gather(values, run.begin, run.end);
  if (h) dp_.all_gather(bf16, run.begin, run.end);
  whole_f32_[i] = whole_f32_[i] || f32;
  whole_bf16_[i] = whole_bf16_[i] || h;
}

void Zero3Params::release_run(std::span<float> values, std::span<uint16_t> bf16, ShardRange run) {
  check_run_forms(values, bf16);
  const size_t i = per_use_index(run);
  if (!sharded_) return;
  if (!values.empty() && whole_f32_[i]) release(values, {}, run);
  if (!bf16.empty() && whole_bf16_[i]) release_bf16(bf16, run);
  whole_f32_[i] = whole_f32_[i] && values.empty();
  whole_bf16_[i] = whole_bf16_[i] && bf16.empty();
}

void Zero3Params::check_run_forms(std::span<float> values, std::span<uint16_t> bf16) const {
  if ((!values.empty() && values.size() != num_params_) ||
      (!bf16.empty() && bf16.size() != num_params_))
    fail("optim", "ZeRO-3 was built for " + std::to_string(num_params_) + " parameters, given " +
                      std::to_string(values.size()) + " values and " + std::to_string(bf16.size()) +
                      " bf16 copies");
}

void Zero3Params::release_layers(std::span<float> values, std::span<uint16_t> bf16) {
  check(values, bf16);
  settle(false);
  for (const ShardRange& r : sharded_runs_) release(values, bf16, r);
  whole_f32_.assign(per_use_.size(), false);
  whole_bf16_.assign(per_use_.size(), false);
  sharded_ = true;
}

void Zero3Params::gather_everything(std::span<float> values, std::span<uint16_t> bf16) {
  check(values, bf16);
  if (!sharded_) return;
  settle(false);
  for (const ShardRange& r : sharded_runs_) {
    dp_.all_gather(values, r.begin, r.end);
    if (!bf16.empty()) dp_.all_gather(bf16, r.begin, r.end);
  }
  sharded_ = false;
}

void Zero3Params::gather_kept_whole(std::span<float> values, std::span<uint16_t> bf16) {
  check(values, bf16);
  for (const ShardRange& r : kept_whole_) {
    dp_.all_gather(values, r.begin, r.end);
    if (!bf16.empty()) dp_.all_gather(bf16, r.begin, r.end);
  }
}

// A tensor lies inside one sharded run or outside all of them; a range across runs is cut.
void Zero3Params::gather_range(std::span<float> values, size_t begin, size_t end) {
  check(values, {});
  if (!sharded_) return;
  settle(true);
  for (const ShardRange& r : sharded_runs_) {
    const size_t lo = std::max(r.begin, begin), hi = std::min(r.end, end);
    if (lo < hi) dp_.all_gather(values, lo, hi);
  }
}

void Zero3Params::release_range(std::span<float> values, size_t begin, size_t end) {
  check(values, {});
  if (!sharded_) return;
  settle(true);
  for (const ShardRange& r : sharded_runs_) {
    const size_t lo = std::max(r.begin, begin), hi = std::min(r.end, end);
    if (lo < hi) release(values, {}, {lo, hi});
  }
}

}  // namespace sft
