#include "optim/zero2.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "optim/zero_memory.h"

namespace sft {

Zero2Grads::Zero2Grads(size_t num_params, std::vector<ShardRange> layer_ranges, Comm& dp)
    : dp_(dp),
      num_params_(num_params),
      shard_(dp.my_shard(num_params)),
      layers_(std::move(layer_ranges)),
      rest_(runs_outside_layers(layers_, num_params, "ZeRO-2")) {}

void Zero2Grads::check(std::span<float> grads) const {
  if (grads.size() != num_params_)
    fail("optim", "ZeRO-2 was built for " + std::to_string(num_params_) + " parameters, given " +
                      std::to_string(grads.size()) + " grads");
}

void Zero2Grads::reduce(std::span<float> grads, ShardRange r) {
  if (r.size() == 0) return;
  dp_.reduce_scatter_sum(grads, r.begin, r.end);
  if (dp_.size() == 1) return;
  // Other ranks' parts: their owners now hold this rank's contribution.
  const size_t own_lo = std::clamp(shard_.begin, r.begin, r.end);
  const size_t own_hi = std::clamp(shard_.end, r.begin, r.end);
  zero_and_release(grads.data() + r.begin, (own_lo - r.begin) * sizeof(float));
  zero_and_release(grads.data() + own_hi, (r.end - own_hi) * sizeof(float));
}

void Zero2Grads::layer_done(std::span<float> grads, int64_t layer) {
  check(grads);
  if (layer >= 0 && static_cast<size_t>(layer) < layers_.size())
    reduce(grads, layers_[static_cast<size_t>(layer)]);
}

void Zero2Grads::reduce_early(std::span<float> grads, ShardRange range,
                              std::span<const ShardRange> later, std::span<float> from) {
  check(grads);
  if (range.size() == 0) return;
  // In ascending order (the head's blocks come so), or the range overlaps none reduced so far.
  const bool ascending = early_.empty() || range.begin >= early_.back().end;
  if (range.end > num_params_ ||
      (!ascending && std::any_of(early_.begin(), early_.end(), [&](const ShardRange& e) {
        return e.begin < range.end && range.begin < e.end;
      })))
    fail("optim", "ZeRO-2: gradient range [" + std::to_string(range.begin) + ", " +
                      std::to_string(range.end) + ") reduced twice or past the end");
  size_t kept = 0;
  for (const ShardRange& p : later) {
    if (p.begin < range.begin || p.end > range.end || p.begin > p.end)
      fail("optim", "ZeRO-2: a piece left for later lies outside its range");
    kept += p.size();
  }
  if (!from.empty() && from.size() != range.size())
    fail("optim", "ZeRO-2: a buffer of " + std::to_string(from.size()) + " for a range of " +
                      std::to_string(range.size()));
  // Where the range's values are: the arena, or the buffer (element range.begin at from[0]).
  float* values = from.empty() ? grads.data() : from.data() - range.begin;
  scratch_.resize(kept);
  float* at = scratch_.data();
  for (const ShardRange& p : later) at = std::copy_n(values + p.begin, p.size(), at);
  if (from.empty()) {
    reduce(grads, range);
  } else {
    dp_.reduce_scatter_part(from, num_params_, range.begin, grads);  // the own sums: the arena
  }
  at = scratch_.data();
  for (const ShardRange& p : later) {
    std::copy_n(at, p.size(), grads.data() + p.begin);
    at += p.size();
  }
  early_.push_back(range);
  later_.insert(later_.end(), later.begin(), later.end());
  if (!ascending)
    std::sort(early_.begin(), early_.end(),
              [](const ShardRange& a, const ShardRange& b) { return a.begin < b.begin; });
}

// The pieces left for later, packed: the all-reduce sums element by element in rank order, as
// the reduce-scatter does, so each own element gets the same bits.
void Zero2Grads::reduce_later(std::span<float> grads) {
  size_t total = 0;
  for (const ShardRange& p : later_) total += p.size();
  scratch_.resize(total);
  float* at = scratch_.data();
  for (const ShardRange& p : later_) at = std::copy_n(grads.data() + p.begin, p.size(), at);
  dp_.all_reduce_sum(std::span<float>(scratch_));
  at = scratch_.data();
  for (const ShardRange& p : later_) {
    const size_t lo = std::clamp(shard_.begin, p.begin, p.end);
    const size_t hi = std::clamp(shard_.end, p.begin, p.end);
    std::copy_n(at + (lo - p.begin), hi - lo, grads.data() + lo);
    if (dp_.size() > 1) {
      zero_and_release(grads.data() + p.begin, (lo - p.begin) * sizeof(float));
      zero_and_release(grads.data() + hi, (p.end - hi) * sizeof(float));
    }
    at += p.size();
  }
  later_.clear();
}

void Zero2Grads::finish_micro_batch(std::span<float> grads) {
  check(grads);
  // The sums are element by element, so reducing a range in pieces gives the same bits.
  for (const ShardRange& r : rest_) {
    size_t at = r.begin;
    for (const ShardRange& e : early_) {
      if (e.end <= at || e.begin >= r.end) continue;
      if (e.begin > at) reduce(grads, {at, e.begin});
      at = std::max(at, e.end);
    }
    if (at < r.end) reduce(grads, {at, r.end});
  }
  early_.clear();
  if (!later_.empty()) reduce_later(grads);
}

void Zero2Grads::zero_own(std::span<float> grads) {
  check(grads);
  std::fill(grads.begin() + static_cast<std::ptrdiff_t>(shard_.begin),
            grads.begin() + static_cast<std::ptrdiff_t>(shard_.end), 0.0f);
}

void Zero2Grads::release_others(std::span<float> grads) {
  check(grads);
  if (dp_.size() == 1) return;
  zero_and_release(grads.data(), shard_.begin * sizeof(float));
  zero_and_release(grads.data() + shard_.end, (num_params_ - shard_.end) * sizeof(float));
}

std::vector<ShardRange> layer_runs(std::span<const ParamPlace> params, int64_t num_layers) {
  std::vector<ShardRange> runs(static_cast<size_t>(std::max<int64_t>(num_layers, 0)));
  std::vector<bool> seen(runs.size(), false);
  for (const ParamPlace& p : params) {
    if (p.layer < 0 || p.size == 0) continue;
    if (static_cast<size_t>(p.layer) >= runs.size()) return {};
    ShardRange& r = runs[static_cast<size_t>(p.layer)];
    if (!seen[static_cast<size_t>(p.layer)]) {
      r = {p.offset, p.offset + p.size};
      seen[static_cast<size_t>(p.layer)] = true;
    } else {
      r.begin = std::min(r.begin, p.offset);
      r.end = std::max(r.end, p.offset + p.size);
    }
  }
  // One run per layer: no other parameter inside it.
  for (const ParamPlace& p : params) {
    if (p.size == 0) continue;
    for (size_t l = 0; l < runs.size(); ++l) {
      if (!seen[l] || static_cast<int64_t>(l) == p.layer) continue;
      if (p.offset < runs[l].end && p.offset + p.size > runs[l].begin) return {};
    }
  }
  return runs;
}

}  // namespace sft
