// RmsNormBlock: ops::rmsnorm calls. See norm_block.h.
#include "model/blocks/norm_block.h"

#include "ops/ops.h"

namespace sft::model {

ops::View RmsNormBlock::applied_weight() const {
  if (weight_offset == 0) return weight->value;
  // Gemma: output * (1.0 + weight.float()), the sum formed in fp32 as here.
  const ops::View w = offset_weight_scratch.first(1, weight->value.numel());
  ops::cast(w, weight->value);
  ops::add_scalar(w, weight_offset);
  return w;
}

void RmsNormBlock::forward(ops::View out, ops::View rstd, ops::View x) const {
  ops::rmsnorm_forward(out, rstd, x, applied_weight(), eps);
}

void RmsNormBlock::add_forward(ops::View sum, ops::View out, ops::View rstd, ops::View a,
                               ops::View b) const {
  ops::add_rmsnorm_forward(sum, out, rstd, a, b, applied_weight(), eps);
}

void RmsNormBlock::backward(ops::View dx, ops::View dout, ops::View x, ops::View rstd) const {
  // A frozen weight (LoRA) has no grad view: the kernel then skips its gradient.
  ops::rmsnorm_backward(dx, weight->grad, dout, x, rstd, applied_weight());
}

}  // namespace sft::model
