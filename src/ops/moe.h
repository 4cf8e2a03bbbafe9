// Mixture-of-experts routing as the ops see it (ops/ops.h's moe_* and grouped_matmul*): which
// rows of a layer's token-side matrices belong to which expert.
//
// The router picks top_k experts per token: expert_of[t·k + j] is token t's j-th choice (slot
// j, in descending probability). The tokens are then sorted by expert, stably, into R = T·k
// permuted rows: expert e owns rows [offsets[e], offsets[e + 1]), and within an expert the rows
// follow (t, j) order. row_of[t·k + j] is the permuted row of token t's slot j, token_of[r] the
// token of permuted row r. A counting sort on the host builds them (moe_sort_tokens): the same
// arrays for any thread count, so every kernel that reads them is deterministic.
// The arrays are in the memory of the views' device (host memory on the CPU, device memory on
// CUDA, like the token ids); the sort itself runs on the host (model/blocks/moe_block.cpp
// mirrors a device's arrays there).
#pragma once

#include <cstdint>

namespace sft::ops {

struct ExpertRouting {
  int64_t tokens = 0, top_k = 0, experts = 0;  // T, k, E
  const int64_t* expert_of = nullptr;          // (T·k)
  const int64_t* offsets = nullptr;            // (E + 1), offsets[E] = T·k
  const int64_t* row_of = nullptr;             // (T·k)
  const int64_t* token_of = nullptr;           // (T·k)

  int64_t rows() const { return tokens * top_k; }
  int64_t count(int64_t e) const { return offsets[e + 1] - offsets[e]; }
};

// Expert e's block of a stacked expert weight (experts' matrices one under the other, as
// transformers stores mlp.experts.gate_up_proj (E, 2I, C) flattened to (E·2I, C)): rows
// [e·stride + first, e·stride + first + rows). gate_up's gate half is {I, 2I, 0}, its up half
// {I, 2I, I}, down_proj (E·C, I) is {C, C, 0}.
struct ExpertBlock {
  int64_t rows = 0, stride = 0, first = 0;
};

}  // namespace sft::ops
