// RmsNormBlock: ops::rmsnorm calls. See norm_block.h.
#include "model/blocks/norm_block.h"

#include "ops/ops.h"

namespace sft::model {

void RmsNormBlock::forward(ops::View out, ops::View rstd, ops::View x) const {
  ops::rmsnorm_forward(out, rstd, x, weight->value, eps);
}

void RmsNormBlock::add_forward(ops::View sum, ops::View out, ops::View rstd, ops::View a,
                               ops::View b) const {
  ops::add_rmsnorm_forward(sum, out, rstd, a, b, weight->value, eps);
}

void RmsNormBlock::backward(ops::View dx, const BlockGradScratch& g, ops::View dout, ops::View x,
                            ops::View rstd) const {
  ops::rmsnorm_backward(dx, g.grad_or_sink(*weight), dout, x, rstd, weight->value);
}

}  // namespace sft::model
