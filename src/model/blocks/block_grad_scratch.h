// BlockGradScratch: the backward scratch every block of a layer shares, one after another —
// the bf16 rounding of a linear's output gradient (the gradient torch autocast's bf16 matmul
// reads) and the sink of frozen attention sinks' gradient (their kernel always writes one).
// Dimensions: T tokens.
#pragma once

#include <cstdint>

#include "model/blocks/layer_shape.h"
#include "model/blocks/shared_scratch.h"
#include "model/parameters.h"
#include "ops/view.h"

namespace sft::model {

struct BlockGradScratch {
  // (T, max(I, C, (H + 2 Hkv)·D)) bf16, under bf16 compute only: one role per linear backward.
  SharedScratch dy16;
  ops::View frozen_sink;  // (1, H) f32, its contents never read

  static BlockGradScratch carve(Carver& cv, const LayerShape& s);

  // A fresh (dy.rows, dy.cols) bf16 role of dy16 for a linear's rounded output gradient (the
  // earlier role is dead), or an empty view under fp32 compute.
  ops::View rounded(int64_t rows, int64_t cols) const;
  ops::View rounded(const ops::View& dy) const { return rounded(dy.rows, dy.cols); }
  // A parameter's gradient, or the sink when it is frozen (no grad view).
  ops::View grad_or_sink(const Parameter& p) const {
    return p.grad.empty() ? frozen_sink.first(1, p.value.cols) : p.grad;
  }
};

}  // namespace sft::model
