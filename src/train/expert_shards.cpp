// The trainer's expert-parallel runs (see expert_shards.h).
#include "train/expert_shards.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/page_release.h"
#include "ops/ops.h"

namespace sft {

namespace {

bool is_expert_stack(ParamSlot slot) {
  return slot == ParamSlot::kExpertsGateUp || slot == ParamSlot::kExpertsDown ||
         slot == ParamSlot::kExpertsGateUpBias || slot == ParamSlot::kExpertsDownBias;
}

std::span<float> part(std::span<float> all, const ShardRange& r) {
  return all.subspan(r.begin, r.size());
}

double sum_of_squares(std::span<const float> grads, const std::vector<ShardRange>& runs) {
  double sq = 0;
  for (const ShardRange& r : runs)
    sq += ops::sum_of_squares(
        ops::view_of(grads.data() + r.begin, 1, static_cast<int64_t>(r.size())));
  return sq;
}

// Appends [begin, end) to runs, joined with the last run when they touch.
void add_run(std::vector<ShardRange>& runs, size_t begin, size_t end) {
  if (begin >= end) return;
  if (!runs.empty() && runs.back().end == begin)
    runs.back().end = end;
  else
    runs.push_back({begin, end});
}

template <typename T>
void release(std::span<T> arena, const std::vector<ShardRange>& runs) {
  if (arena.empty()) return;
  for (const ShardRange& r : runs) zero_and_release(arena.data() + r.begin, r.size() * sizeof(T));
}

}  // namespace

ExpertShards::ExpertShards(const model::ParameterSet& params, int64_t experts, Comm& dp, Comm& ep,
                           Comm& expert_dp)
    : dp_(dp), ep_(ep), expert_dp_(expert_dp) {
  const int64_t P = ep.size(), q = ep.rank();
  if (experts <= 0 || experts % P != 0)
    fail("train", "expert parallelism over " + std::to_string(P) +
                      " ranks: " + std::to_string(experts) + " experts do not divide by it");
  // The parameters in arena order, so that the runs come out sorted.
  std::vector<const model::Parameter*> order;
  for (const model::Parameter& p : params.all()) order.push_back(&p);
  std::sort(order.begin(), order.end(),
            [](const auto* a, const auto* b) { return a->offset < b->offset; });
  size_t at = 0;
  for (const model::Parameter* p : order) {
    const auto begin = static_cast<size_t>(p->offset);
    const auto n = static_cast<size_t>(p->value.numel());
    if (!is_expert_stack(p->spec.slot)) continue;
    add_run(shared_, at, begin);
    // Each expert's rows are one block of the stack: shard_of over P gives rank q's experts.
    const ShardRange mine = shard_of(n, static_cast<int>(q), static_cast<int>(P));
    add_run(own_, begin + mine.begin, begin + mine.end);
    add_run(others_, begin, begin + mine.begin);
    add_run(others_, begin + mine.end, begin + n);
    stacks_.push_back({begin, begin + n});
    at = begin + n;
  }
  add_run(shared_, at, static_cast<size_t>(params.numel()));
}

std::vector<ParamSlice> ExpertShards::own_slices(std::span<const ParamSlice> slices) const {
  std::vector<ParamSlice> out;
  for (const ParamSlice& s : slices)
    for (const std::vector<ShardRange>* runs : {&shared_, &own_})
      for (const ShardRange& r : *runs) {
        const size_t lo = std::max(s.offset, r.begin), hi = std::min(s.offset + s.size, r.end);
        if (lo < hi) out.push_back({lo, hi - lo, s.decay});
      }
  std::sort(out.begin(), out.end(),
            [](const ParamSlice& a, const ParamSlice& b) { return a.offset < b.offset; });
  return out;
}

void ExpertShards::reduce_gradients(std::span<float> grads) {
  for (const ShardRange& r : shared_) dp_.all_reduce_sum(part(grads, r));
  for (const ShardRange& r : own_) expert_dp_.all_reduce_sum(part(grads, r));
}

void ExpertShards::zero_gradients(std::span<float> grads) const {
  for (const std::vector<ShardRange>* runs : {&shared_, &own_})
    for (const ShardRange& r : *runs) std::fill_n(grads.data() + r.begin, r.size(), 0.0f);
}

double ExpertShards::grad_norm(std::span<const float> grads, std::optional<double> shared_sq) {
  std::vector<double> own = {sum_of_squares(grads, own_)};
  ep_.all_reduce_sum(std::span<double>(own));
  return std::sqrt(shared_sq.value_or(sum_of_squares(grads, shared_)) + own[0]);
}

void ExpertShards::gather_experts(std::span<float> values, std::span<float> exp_avg,
                                  std::span<float> exp_avg_sq) {
  for (const ShardRange& r : stacks_)
    for (std::span<float> arena : {values, exp_avg, exp_avg_sq})
      if (!arena.empty()) ep_.all_gather(part(arena, r));
}

void ExpertShards::release_others(std::span<float> arena) const {
  release(arena, others_);
}

void ExpertShards::release_others(std::span<uint16_t> arena) const {
  release(arena, others_);
}

size_t ExpertShards::other_experts_bytes() const {
  size_t n = 0;
  for (const ShardRange& r : others_) n += r.size();
  return n * sizeof(float);
}

}  // namespace sft
