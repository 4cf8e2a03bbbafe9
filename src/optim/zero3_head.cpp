// ZeRO-3's LM head weight a block at a time. See zero3_head.h.
#include "optim/zero3_head.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"

namespace sft {

Zero3HeadBlocks::Zero3HeadBlocks(Comm& dp, ShardRange run, size_t width, GradDone grad_done)
    : dp_(dp), run_(run), width_(width), grad_done_(std::move(grad_done)) {
  if (width == 0 || run.size() % width != 0)
    fail("optim", "ZeRO-3 head: a run of " + std::to_string(run.size()) +
                      " elements is not rows of " + std::to_string(width));
}

void Zero3HeadBlocks::begin(std::span<const float> values, std::span<const float> grads,
                            bool sharded) {
  if (values.size() < run_.end || (!grads.empty() && grads.size() != values.size()))
    fail("optim", "ZeRO-3 head: " + std::to_string(values.size()) + " values and " +
                      std::to_string(grads.size()) +
                      " gradients do not hold the head's run, which ends at " +
                      std::to_string(run_.end));
  values_ = values;
  grads_ = grads;
  sharded_ = sharded;
  chunks_ = 0;
  held_v0_ = held_v1_ = grad_v0_ = grad_v1_ = -1;
}

void Zero3HeadBlocks::end() {
  values_ = grads_ = {};
  held_v0_ = held_v1_ = grad_v0_ = grad_v1_ = -1;  // the next call's values are the next step's
}

ShardRange Zero3HeadBlocks::arena_range(int64_t v0, int64_t v1) const {
  const size_t rows = run_.size() / width_;
  if (v0 < 0 || v1 < v0 || static_cast<size_t>(v1) > rows)
    fail("optim", "ZeRO-3 head: rows [" + std::to_string(v0) + ", " + std::to_string(v1) + ") of " +
                      std::to_string(rows));
  return {run_.begin + static_cast<size_t>(v0) * width_,
          run_.begin + static_cast<size_t>(v1) * width_};
}

int64_t Zero3HeadBlocks::chunks(int64_t mine) {
  if (!sharded_) return mine;
  std::vector<double> most = {static_cast<double>(mine)};
  dp_.all_reduce_max(std::span<double>(most));
  chunks_ = static_cast<int64_t>(most[0]);
  return chunks_;
}

std::span<float> Zero3HeadBlocks::grad_block(int64_t v0, int64_t v1) {
  const ShardRange r = arena_range(v0, v1);
  if (v0 != grad_v0_ || v1 != grad_v1_) {
    const std::span<float> block = grad_buffer_.as<float>(r.size());
    // What the arena holds there: the own part's sum so far, zeros elsewhere (optim/zero2.h).
    const ShardRange own = dp_.my_shard(grads_.size());
    const size_t lo = std::clamp(own.begin, r.begin, r.end);
    const size_t hi = std::clamp(own.end, r.begin, r.end);
    std::fill(block.begin(), block.begin() + static_cast<std::ptrdiff_t>(lo - r.begin), 0.0f);
    std::copy(grads_.begin() + static_cast<std::ptrdiff_t>(lo),
              grads_.begin() + static_cast<std::ptrdiff_t>(hi),
              block.begin() + static_cast<std::ptrdiff_t>(lo - r.begin));
    std::fill(block.begin() + static_cast<std::ptrdiff_t>(hi - r.begin), block.end(), 0.0f);
    grad_v0_ = v0;
    grad_v1_ = v1;
  }
  return grad_buffer_.as<float>(r.size());
}

// The block buffer spares the arena's non-own pages. A rank that owns the block whole has none
// there: it adds to the arena's rows in place (its own sums so far), and the reduction then
// runs in place too; the same values and sums, without seeding a buffer from the arena.
bool Zero3HeadBlocks::grad_in_buffer(int64_t v0, int64_t v1) const {
  return sharded_ && chunks_ == 1 && !grads_.empty() &&
         sole_owner(arena_range(v0, v1)) != dp_.rank();
}

float* Zero3HeadBlocks::grad_rows(int64_t v0, int64_t v1) {
  return grad_in_buffer(v0, v1) ? grad_block(v0, v1).data() : nullptr;
}

const float* Zero3HeadBlocks::rows(int64_t v0, int64_t v1) {
  if (values_.empty()) fail("optim", "ZeRO-3 head: rows asked for outside begin() / end()");
  const ShardRange r = arena_range(v0, v1);
  if (!sharded_) return values_.data() + r.begin;
  if (v0 == held_v0_ && v1 == held_v1_) return held_;
  held_v0_ = v0;
  held_v1_ = v1;
  if (const int owner = sole_owner(r); owner >= 0) {
    // One rank holds the whole block: it sends straight from the arena (MPI_Bcast only reads
    // the root's buffer) and reads it there; the others receive into the buffer. Nobody copies
    // an own part first, which an all-gather would put on the critical path.
    if (owner == dp_.rank()) {
      dp_.broadcast(std::span<float>(const_cast<float*>(values_.data()) + r.begin, r.size()),
                    owner);
      return held_ = values_.data() + r.begin;
    }
    const std::span<float> block = buffer_.as<float>(r.size());
    dp_.broadcast(block, owner);
    return held_ = block.data();
  }
  const std::span<float> block = buffer_.as<float>(r.size());
  // The own part copied in at its place, the rest from its owners (the whole arena's layout).
  const ShardRange own = dp_.my_shard(values_.size());
  const size_t lo = std::clamp(own.begin, r.begin, r.end), hi = std::clamp(own.end, r.begin, r.end);
  if (hi > lo)
    std::memcpy(block.data() + (lo - r.begin), values_.data() + lo, (hi - lo) * sizeof(float));
  dp_.all_gather_part(block, values_.size(), r.begin);
  return held_ = block.data();
}

int Zero3HeadBlocks::sole_owner(ShardRange r) const {
  for (int k = 0; k < dp_.size(); ++k) {
    const ShardRange s = shard_of(values_.size(), k, dp_.size());
    if (s.begin <= r.begin && r.end <= s.end) return k;
  }
  return -1;
}

void Zero3HeadBlocks::grad_done(int64_t v0, int64_t v1) {
  if (!grad_done_) return;
  // A rank without rows never asked for the block: its buffer is the arena's rows as they are.
  if (grad_in_buffer(v0, v1)) return grad_done_(arena_range(v0, v1), grad_block(v0, v1));
  grad_done_(arena_range(v0, v1), {});
}

}  // namespace sft
