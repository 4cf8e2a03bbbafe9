// BlockGradScratch. See block_grad_scratch.h.
#include "model/blocks/block_grad_scratch.h"

#include <algorithm>

namespace sft::model {

BlockGradScratch BlockGradScratch::carve(Carver& cv, const LayerShape& s) {
  BlockGradScratch g;
  if (s.bf16()) {
    const int64_t widest = std::max({s.I, s.C, s.q_width() + 2 * s.kv_width(), s.E});
    g.dy16 = SharedScratch::take(cv, static_cast<size_t>(s.T * widest) * sizeof(uint16_t));
  }
  g.frozen_sink = take_f32(cv, 1, s.H);
  return g;
}

ops::View BlockGradScratch::rounded(int64_t rows, int64_t cols) const {
  if (dy16.empty()) return {};
  dy16.hand_over();
  return dy16.role(DType::kBF16, rows, cols);
}

}  // namespace sft::model
