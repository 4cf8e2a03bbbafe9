// The LM head's weight a vocabulary block at a time, from the caller (ZeRO-3: the head's rows
// all-gathered from the data-parallel ranks into one block-sized buffer, never the whole table,
// and its gradient reduce-scattered a block at a time: optim/zero3_head.h).
//
// The fused head (ops/lm_head_ce.h) runs its products over vocabulary blocks anyway; given
// these, it asks for each block's rows just before a product reads them, instead of reading a
// whole w. The gathers behind rows() are collectives, so every rank of the group must ask for
// the same blocks in the same order although ranks score different numbers of rows: the head
// first tells chunks() how many row chunks it has, runs as many as the most any rank has
// (empty chunks ask for the blocks and compute nothing), and asks in a fixed order: per chunk,
// the forward product's blocks 0, 1, ..., then (with a gradient) the gradient products' blocks
// 0, 1, ... again. grad_done(v0, v1) follows the last chunk's gradient product of that block:
// from then on no product of this call writes dw rows [v0, v1).
// CPU, fp32 only, no vocabulary shard (tensor parallelism) and no full logits.
#pragma once

#include <cstdint>

namespace sft::ops {

class LmHeadWeightBlocks {
 public:
  virtual ~LmHeadWeightBlocks() = default;
  // This rank's number of row chunks in; the number every rank runs out (the most over them).
  virtual int64_t chunks(int64_t mine) = 0;
  // Rows [v0, v1) of the (V, C) weight, row-major, valid until the next call.
  virtual const float* rows(int64_t v0, int64_t v1) = 0;
  // Where this call adds the gradient of rows [v0, v1) (a buffer holding dw's rows as they
  // were), or null: in dw itself. Asked before each gradient product of the block.
  virtual float* grad_rows(int64_t v0, int64_t v1) = 0;
  virtual void grad_done(int64_t v0, int64_t v1) = 0;
};

}  // namespace sft::ops
