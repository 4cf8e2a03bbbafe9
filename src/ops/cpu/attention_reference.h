// Scaled dot-product attention for one document (or one sequence against a KV cache), with
// grouped-query heads, causal masking and an optional sliding window, as transformers' eager
// attention computes it: softmax(q kᵀ / sqrt(D) + mask) v, softmax in the compute dtype.
//
// Query i sits at absolute position q_offset + i; key j is visible when j ≤ q_offset + i and,
// with window w > 0, q_offset + i − j < w (transformers: kv_idx > q_idx − sliding_window).
// Query head h reads kv head h / (H / Hkv).
//
// Signature rule: outputs first, then saved activations, inputs, weights, then sizes.
// Activation grads overwrite (=). Dimensions: Tq queries, Tk keys, H heads, Hkv kv heads,
// D head dim.
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

struct AttentionShape {
  int64_t Tq = 0, Tk = 0, q_offset = 0;
  int64_t H = 0, Hkv = 0, D = 0;
  int64_t window = 0;  // 0 = no sliding window
  double scale = 0;    // 0 = 1/sqrt(D)
  double softcap = 0;  // 0 = none
};

// out (Tq, H, D) =; probs (H, Tq, Tk) saved (over the keys: with sinks a row sums to less than
// 1); q (Tq, H, D); k, v (Tk, Hkv, D); sinks (H) or null.
template <typename T>
void attention_forward(T* out, T* probs, const T* q, const T* k, const T* v,
                       const AttentionShape& s, const T* sinks = nullptr);

// dq (Tq, H, D) =; dk, dv (Tk, Hkv, D) =; dsinks (H) += when sinks are given; scratch (Tq, Tk)
// is workspace (the soft-cap's recomputed scores allocate their own); dout (Tq, H, D); probs as
// saved by forward; q, k, v the forward inputs.
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, T* scratch, const T* dout, const T* probs, const T* q,
                        const T* k, const T* v, const AttentionShape& s, T* dsinks = nullptr);

}  // namespace sft::ops::cpu
