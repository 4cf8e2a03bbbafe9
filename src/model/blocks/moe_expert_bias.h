// Per-expert biases on the permuted rows of a mixture-of-experts layer (gpt-oss's
// mlp.experts.gate_up_proj_bias and down_proj_bias): expert e's bias is added to its rows
// [offsets[e], offsets[e + 1]) of a grouped GEMM's output, and its gradient is the column sums
// of those rows of the output gradient. Each is one ops::add_bias / ops::bias_backward per
// expert with tokens (a fixed order of fixed sums: deterministic for any thread count).
// The loops read the routing's offsets (E + 1) on the host: on a device, the host mirror of the
// routing (MoeMlpBlock::Saved::host_offsets), the adds and sums on the views' device.
// Signature rule: outputs first; parameter grads accumulate (+=).
// Dimensions: R permuted rows, E experts, O a projection's outputs.
#pragma once

#include <cstdint>
#include <span>

#include "ops/view.h"

namespace sft::model {

// y (R, n) += row e of bias, its columns [first, first + n), on expert e's rows. bias (E, ·) f32.
void add_expert_bias(ops::View y, ops::View bias, std::span<const int64_t> offsets, int64_t first);
// dbias (E, ·) f32: row e's columns [first, first + n) += column sums of dy's (R, n) rows of
// expert e.
void expert_bias_backward(ops::View dbias, ops::View dy, std::span<const int64_t> offsets,
                          int64_t first);

}  // namespace sft::model
