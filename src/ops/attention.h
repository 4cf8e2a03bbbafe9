// Tiled (flash-style) scaled dot-product attention on runs of packed documents.
//
// softmax(score(q kᵀ) + mask) v, as transformers' eager attention (ops/cpu/attention_reference.h
// is the eager reference), but computed tile by tile with an online softmax: forward saves only the
// log-sum-exp per query and head (Tq·H values) instead of the (H, n, n) probabilities, and
// backward recomputes the probabilities from it. Tiles the causal / window mask hides entirely
// are never visited.
//
// Segment: one run of queries against one run of keys (a packed document, or a sequence against
// its KV cache). Queries are rows [q_begin, q_begin + q_len) of q; keys/values rows
// [k_begin, k_begin + k_len) of k, v. Query i sits at absolute position q_offset + i; key j is
// visible when j ≤ q_offset + i and, with window > 0, q_offset + i − j < window. Every query must
// see its own position: q_offset + q_len ≤ k_len. Query head h reads kv head h / (H / Hkv).
// Segments of one call do not overlap in q rows (nor, for backward, in k rows).
//
// Signature rule: outputs first, then saved activations, inputs, then sizes; activation grads
// overwrite (=). Dimensions: Tq query rows, Tk key rows, H heads, Hkv kv heads, D head dim.
// T = float computes in fp32 (running max, sum and accumulator included), T = double in fp64.
// Deterministic: each output element is produced by one work item in a fixed order, so results
// are bit-identical for any thread count. No heap allocation: scratch is the caller's workspace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "ops/workspace.h"

namespace sft::ops {

struct AttentionSegment {
  int64_t q_begin = 0, q_len = 0, k_begin = 0, k_len = 0, q_offset = 0;
};

// The score of a query against a key: s = q·k · scale (scale 0 means 1/sqrt(D), the default of
// every family but Gemma's query_pre_attn_scalar and Granite's attention_multiplier), then, with
// softcap > 0, s = softcap · tanh(s / softcap) (Gemma 2's attn_logit_softcapping), as transformers
// computes it before the mask and the softmax. Backward multiplies dS by 1 − tanh², recomputed.
struct AttentionDims {
  int64_t H = 0, Hkv = 0, D = 0, window = 0;  // window 0 = no sliding window
  double scale = 0;
  double softcap = 0;
};

// The tiled kernels' tuning and their scratch memory, which the caller owns (ops/workspace.h):
// size `memory` with attention_workspace_bytes (below) for the largest call.
// Tile sizes, measured with bench_attention BM_FlashTiles (one thread, forward + backward of a
// Qwen3-0.6B layer, 2-core Xeon VM): 128 queries × 64 keys was fastest or tied on both one
// 1024-token document (254 ms; 64×64 267, 128×128 244, 32×64 300) and ~200-token documents
// (83 ms; 64×64 83.5, 128×128 88, 32×128 95). Short query tiles re-stream K/V more often; long
// key tiles waste more of the diagonal tile on masked scores (documents of ~200 feel it) and
// push the score tile and the dK/dV accumulators out of L1/L2. Tests shrink them to exercise
// partial and masked tiles.
struct AttentionWorkspace {
  int64_t q_tile = 128;
  int64_t k_tile = 64;
  // 0 = every thread of the default pool; 1 = serial on the caller (required when the caller
  // itself runs inside a default-pool task: the pool is not reentrant).
  int64_t max_threads = 0;
  Workspace memory;
};

// The calls a workspace is sized for: q's dtype (f32, f64 or bf16), at most q_rows query rows
// and k_rows key rows, at most max_segments segments (0: q_rows, one query or more each) whose
// key rows do not overlap (packed documents; one sequence per KV cache). A call outside that
// fails with the workspace error. The bytes cover forward and backward alike (forward_only:
// forward), with the tiles and thread cap of `tuning` (its memory is not read).
struct AttentionShape {
  DType dtype = DType::kF32;
  int64_t q_rows = 0, k_rows = 0;
  int64_t max_segments = 0;
  bool forward_only = false;
};
size_t attention_workspace_bytes(const AttentionShape& shape, const AttentionDims& dims,
                                 const AttentionWorkspace& tuning = {});

// out (Tq, H, D) =; lse (Tq, H) = log-sum-exp of the scores per query and head, saved
// for backward; q (Tq, H, D); k, v (Tk, Hkv, D); rows contiguous, strides H·D resp. Hkv·D.
// Rows outside every segment are untouched.
template <typename T>
void attention_forward(T* out, T* lse, const T* q, const T* k, const T* v,
                       std::span<const AttentionSegment> segments, const AttentionDims& dims,
                       AttentionWorkspace& ws);

// dq (Tq, H, D) =; dk, dv (Tk, Hkv, D) = (rows outside every segment untouched; a key row seen
// by several heads of its group sums them); dout (Tq, H, D); out and lse as forward returned
// them; q, k, v the forward inputs.
template <typename T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* out, const T* lse, const T* q,
                        const T* k, const T* v, std::span<const AttentionSegment> segments,
                        const AttentionDims& dims, AttentionWorkspace& ws);

// bf16, as PyTorch's CPU flash attention under autocast: q, k, v hold bf16 bits; S = Q Kᵀ in
// fp32 accumulation, the online softmax (running max and sum, lse) in fp32, P rounded to bf16
// for P V (fp32 accumulation); out is bf16 (uint16_t, rounded once from fp32) or float.
// Backward: dout fp32 is rounded to bf16 once (autocast's bf16 gradient); Δ = rowsum(dO ⊙ O) in
// fp32; P recomputed from lse; dV += Pᵀ dO, dP = dO Vᵀ, dS = P ⊙ (dP − Δ) rounded to bf16 for
// dQ += dS K · scale and dK += dSᵀ Q · scale; dq, dk, dv fp32. The tile products run on AMX when
// the CPU has it (ops/cpu/amx.h), else on a portable loop (SFT_CPU_ISA=generic forces that);
// a given path and inputs give the same bits for any thread count. Any head dim (padded to 32
// inside). Out = uint16_t or float.
template <typename Out>
void attention_forward_bf16(Out* out, float* lse, const uint16_t* q, const uint16_t* k,
                            const uint16_t* v, std::span<const AttentionSegment> segments,
                            const AttentionDims& dims, AttentionWorkspace& ws);
template <typename Out>
void attention_backward_bf16(float* dq, float* dk, float* dv, const float* dout, const Out* out,
                             const float* lse, const uint16_t* q, const uint16_t* k,
                             const uint16_t* v, std::span<const AttentionSegment> segments,
                             const AttentionDims& dims, AttentionWorkspace& ws);

}  // namespace sft::ops
