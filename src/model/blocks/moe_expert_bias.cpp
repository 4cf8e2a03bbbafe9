// Per-expert biases on permuted rows. See moe_expert_bias.h.
#include "model/blocks/moe_expert_bias.h"

#include "ops/ops.h"

namespace sft::model {

void add_expert_bias(ops::View y, ops::View bias, const ops::ExpertRouting& r, int64_t first) {
  for (int64_t e = 0; e < r.experts; ++e) {
    const int64_t n = r.count(e);
    if (n == 0) continue;
    ops::add_bias(y.row_range(r.offsets[e], n), bias.row_range(e, 1).columns(first, y.cols));
  }
}

void expert_bias_backward(ops::View dbias, ops::View dy, const ops::ExpertRouting& r,
                          int64_t first) {
  for (int64_t e = 0; e < r.experts; ++e) {
    const int64_t n = r.count(e);
    if (n == 0) continue;
    ops::bias_backward(dbias.row_range(e, 1).columns(first, dy.cols),
                       dy.row_range(r.offsets[e], n));
  }
}

}  // namespace sft::model
