// Per-expert biases on permuted rows. See moe_expert_bias.h.
#include "model/blocks/moe_expert_bias.h"

#include "ops/ops.h"

namespace sft::model {

void add_expert_bias(ops::View y, ops::View bias, std::span<const int64_t> offsets, int64_t first) {
  for (size_t e = 0; e + 1 < offsets.size(); ++e) {
    const int64_t n = offsets[e + 1] - offsets[e];
    if (n == 0) continue;
    ops::add_bias(y.row_range(offsets[e], n),
                  bias.row_range(static_cast<int64_t>(e), 1).columns(first, y.cols));
  }
}

void expert_bias_backward(ops::View dbias, ops::View dy, std::span<const int64_t> offsets,
                          int64_t first) {
  for (size_t e = 0; e + 1 < offsets.size(); ++e) {
    const int64_t n = offsets[e + 1] - offsets[e];
    if (n == 0) continue;
    ops::bias_backward(dbias.row_range(static_cast<int64_t>(e), 1).columns(first, dy.cols),
                       dy.row_range(offsets[e], n));
  }
}

}  // namespace sft::model
