// ZeRO-3's LM head weight a vocabulary block at a time (ops/lm_head_blocks.h): the fused head
// asks for rows [v0, v1) of the weight just before a product reads them, and gets them
// all-gathered from their owners into one block-sized buffer, allocated once and kept on huge
// pages (so no page is faulted in again per block or per step, and the copies between ranks
// walk few pages). A block that one rank owns whole is broadcast from that rank's arena, which
// that rank then reads in place (no copy of its own part first). The sharded head's weight is never
// whole on a rank: at the peak, the LM head, a rank holds one block of it (16384 rows) instead of
// the whole table (Qwen3-0.6B: 64 MB instead of 622 MB). The values are the owners' bits, so
// the head computes exactly what it computes from a whole weight.
//
// The cost: the weight moves twice per pass (the logits product, then the gradient products;
// once per row chunk of the head, and a call has one chunk up to 512 rows at Qwen's vocabulary)
// where a whole gather moves it once, but into the kept buffer, not into freshly faulted pages.
//
// grad_done(v0, v1) passes the arena range of that block's gradient to the caller's function:
// an untied head's gradient is complete there and ZeRO-2 reduce-scatters it at once
// (optim/zero2.h, reduce_early), so that the head's whole gradient is not held either. A tied
// table's is not complete (the lookup's gradient is added to the same rows after the backward,
// and ZeRO-1 sums the two on each rank before the reduction): its function does nothing.
//
// Outside training's sharded steps (evaluation and saves gather the whole model first, and
// ranks run different numbers of evaluation batches) begin(values, false) makes it hand out
// rows of the whole values in place, with no collective.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "core/huge_buffer.h"
#include "ops/lm_head_blocks.h"
#include "parallel/comm.h"

namespace sft {

class Zero3HeadBlocks final : public ops::LmHeadWeightBlocks {
 public:
  // run: the head weight's run of the trainable arena, rows of `width` elements.
  // grad_done(range, block): the gradient of that arena range is complete, in `block` (a
  // kept buffer: the arena's own part as it was plus this rank's head gradient; the arena's
  // range untouched) or, when block is empty, in the arena itself.
  using GradDone = std::function<void(ShardRange range, std::span<float> block)>;
  Zero3HeadBlocks(Comm& dp, ShardRange run, size_t width, GradDone grad_done);

  // Around each head call: the fp32 values it reads and the gradients it adds to (empty: none),
  // and whether they are sharded now.
  void begin(std::span<const float> values, std::span<const float> grads, bool sharded);
  void end();

  int64_t chunks(int64_t mine) override;
  const float* rows(int64_t v0, int64_t v1) override;
  // A call of one row chunk on every rank adds each block's gradient into a kept buffer (so no
  // arena page is faulted in for it), except on the rank that owns the block whole (it adds in
  // place: all those pages are its own); with more chunks a block's gradient builds up over the
  // chunks, in the arena.
  float* grad_rows(int64_t v0, int64_t v1) override;
  void grad_done(int64_t v0, int64_t v1) override;

  // The bytes of the kept block buffer.
  size_t buffer_bytes() const { return buffer_.capacity(); }

 private:
  ShardRange arena_range(int64_t v0, int64_t v1) const;
  // The rank whose shard holds all of arena range r, or -1 (it spans two shards).
  int sole_owner(ShardRange r) const;
  // Whether this call adds the gradient of rows [v0, v1) into grad_buffer_ (else the arena).
  bool grad_in_buffer(int64_t v0, int64_t v1) const;

  Comm& dp_;
  ShardRange run_;
  size_t width_;
  // The gradient block buffer for rows [v0, v1), filled from the arena as it is now.
  std::span<float> grad_block(int64_t v0, int64_t v1);

  GradDone grad_done_;
  std::span<const float> values_, grads_;
  bool sharded_ = false;
  int64_t chunks_ = 0;  // agreed this call
  // On huge pages: the gathers copy into and out of them (core/huge_buffer.h).
  HugeBuffer buffer_, grad_buffer_;
  int64_t held_v0_ = -1, held_v1_ = -1;  // the rows held_ points at this call (-1: none)
  const float* held_ = nullptr;          // in buffer_, or the arena where this rank owns them
  int64_t grad_v0_ = -1, grad_v1_ = -1;  // the rows in grad_buffer_ this call
};

}  // namespace sft
