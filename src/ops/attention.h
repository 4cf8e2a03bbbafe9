// Attention over packed documents, tiled with an online softmax (flash-attention style).
// (Interface as agreed with the attention kernel's author; see ops/cpu/ for the kernel.)
#pragma once

#include <cstdint>
#include <span>

namespace sft::ops {

// One run of queries against one run of keys (a packed document, or a sequence against its
// KV cache). Queries are rows [q_begin, q_begin + q_len) of q; keys/values rows
// [k_begin, k_begin + k_len) of k, v. Query i sits at absolute position q_offset + i; key j
// is visible when j <= q_offset + i and, with window > 0, q_offset + i - j < window.
struct AttentionSegment {
  int64_t q_begin = 0, q_len = 0, k_begin = 0, k_len = 0, q_offset = 0;
};
struct AttentionDims {
  int64_t H = 0, Hkv = 0, D = 0, window = 0;
};

}  // namespace sft::ops
