// The CUDA backend's kernels on views: sft::ops::cuda::<name> takes the arguments of the
// ops:: function of the same name (ops/ops.h), in the same order, with every view on
// Device::kCuda. Dtypes are those of the CPU backend minus f64 (the reference stays on the
// CPU): f32, and bf16 where ops.h takes bf16. Token ids are device memory (int64, one per row).
//
// All kernels run in order on the default stream and return before they finish (except
// sum_of_squares, which returns a number); ops/cuda/cuda_memory.h copies and synchronizes.
// Deterministic: no floating-point atomics; every sum has a fixed order (tree reductions of a
// fixed block size, fixed-size row chunks), so the same inputs give the same bits run to run.
// They are the slots of the CUDA kernel table (ops/cuda/kernel_table.cpp). Not here yet
// (docs/cuda.md): vocabulary shards.
#pragma once

#include <cstdint>
#include <span>

#include "ops/ops.h"
#include "ops/view.h"

namespace sft::ops::cuda {

// cuBLASLt: c (M, N) = or += op(a) · op(b); f32 × f32 → f32 (fp32 compute, no TF32) or
// bf16 × bf16 → f32 (fp32 accumulation). One cached handle, workspace and algorithm per shape.
void matmul(View c, View a, View b, bool trans_a, bool trans_b, bool accumulate);
// The two cuBLASLt products (cuBLAS runs these skinny shapes near the memory bandwidth, so a
// fused pass over g would save little here, unlike the CPU's).
void lora_backward_products(View db, View du, View g, View u, View b);

void rmsnorm_forward(View out, View rstd, View x, View w, double eps);
void rmsnorm_backward(View dx, View dw, View dout, View x, View rstd, View w);
// As the unfused cast, add and rmsnorm kernels.
void add_rmsnorm_forward(View sum, View out, View rstd, View a, View b, View w, double eps);

void rope_forward(View x, View cos, View sin, int64_t head_dim);
void rope_backward(View dx, View cos, View sin, int64_t head_dim);

// f32, or bf16 gate and up with f32 h / gradients (as the CPU).
void swiglu_forward(View h, View gate, View up);
void swiglu_backward(View dgate, View dup, View dh, View gate, View up);
void swiglu_clamped_forward(View h, View gate, View up, double alpha, double limit);
void swiglu_clamped_backward(View dgate, View dup, View dh, View gate, View up, double alpha,
                             double limit);
void gelu_tanh_gated_forward(View h, View gate, View up);
void gelu_tanh_gated_backward(View dgate, View dup, View dh, View gate, View up);

// ids: device int64[out.rows]. The backward adds each vocabulary row's gradients in token
// order, owned by the row's first token: bit-identical to the CPU kernel.
void embedding_forward(View out, const int64_t* ids, View table, VocabShard shard = {});
void embedding_backward(View dtable, View dout, const int64_t* ids, VocabShard shard = {});

// The fused LM head + cross-entropy (ops/cuda/lm_head.cpp): ops.h's contract with targets in
// device memory (int64, one per row of x), x and w f32 or bf16, dx, dw and logits f32. The
// chunk scratch is the backend's scratch() (the Workspace argument is the CPU's and is not
// used here). Returns when the statistics are on the host. `tuning` (tests, benchmarks): rows
// per chunk and the vocabulary block of the products; 0 = the defaults.
LmHeadStats lm_head_cross_entropy(View dx, View dw, View logits, View x, View w,
                                  const int64_t* targets, double scale, Workspace workspace,
                                  VocabShard shard = {}, double softcap = 0,
                                  const LmHeadTuning& tuning = {});

// dst += src: f32 += f32 or f32 += bf16; with `rounded` (bf16), the sum is cast there too.
void add(View dst, View src, View rounded = {});
void add_bias(View y, View b);
void bias_backward(View db, View dy);

// torch's operation order in fp32 without fused multiply-adds: bit-identical to the CPU kernel.
void adamw_update(View param, View grad, View exp_avg, View exp_avg_sq, const AdamWScalars& k,
                  View bf16_copy = {});
void adamw_update_slices(View param, View grad, View exp_avg, View exp_avg_sq,
                         std::span<const ParamSlice> slices, const AdamWScalars& k, View bf16_copy);
// Σ x² in double: fixed 16384-element blocks, then the block sums in a fixed order.
double sum_of_squares(View x);
void scale(View x, float factor);
void add_scalar(View x, float c);
void add_uniform_noise(View x, float magnitude, uint64_t seed, uint64_t stream, uint64_t position);
void dropout(View dst, View src, float p, uint64_t seed, uint64_t stream, uint64_t position,
             bool accumulate);

// Tiled attention over packed segments (ops.h; attention_forward.cu, attention_backward.cu):
// f32, or bf16 q, k, v with out bf16 or f32 (lse and the gradients f32); D ≤ 256. The
// workspace is not read: the segment list, the tile list and Δ live in the backend's scratch
// (cuda_memory.h). Backward owns each dK/dV tile and each dQ tile in one block (no atomics).
void attention_forward(View out, View lse, View q, View k, View v,
                       std::span<const AttentionSegment> segments, const AttentionDims& dims,
                       Workspace workspace);
void attention_backward(View dq, View dk, View dv, View dout, View out, View lse, View q, View k,
                        View v, std::span<const AttentionSegment> segments,
                        const AttentionDims& dims, Workspace workspace);

// Attention sinks (ops.h): out, lse, sinks f32 forward; backward out f32 or bf16, the rest f32.
void attention_sinks_forward(View out, View lse, View sinks);
void attention_sinks_backward(View dsinks, View dout, View out, View lse, View sinks);

void zero(View x);
// f32 → bf16 (round to nearest even, NaN quieted as core/half.h), bf16 → f32, f32 → f32.
void cast(View dst, View src);

// Mixture of experts (ops.h; moe_router.cu, moe_permute.cu, moe_grouped_matmul.cu): the
// routing's arrays (expert_of, offsets, row_of, token_of) and the load's padding mask are
// device memory, the sort stays on the host (ops::moe_sort_tokens). f32 views; xs and the
// grouped GEMMs' operands f32 or bf16 (fp32 accumulation, f32 results). Each output is written
// by one thread in the CPU kernels' order of terms (the GEMMs and the combine's weight
// gradient: fixed-order sums of their own), no atomics.
void moe_router_forward(View probs, View weights, int64_t* expert_of, View logits, int64_t top_k,
                        bool normalize);
void moe_router_backward(View dlogits, View dweights, View dprobs, View probs,
                         const int64_t* expert_of, bool normalize);
void moe_permute_forward(View xs, View x, const ExpertRouting& routing);
void moe_permute_backward(View dx, View dxs, const ExpertRouting& routing);
void grouped_matmul(View c, View a, View w, const ExpertRouting& routing, ExpertBlock block,
                    bool trans_w, bool accumulate);
void grouped_matmul_weight_grad(View dw, View dy, View x, const ExpertRouting& routing,
                                ExpertBlock block);
void moe_combine_forward(View out, View ys, View weights, const ExpertRouting& routing);
void moe_combine_backward(View dys, View dweights, View dout, View ys, View weights,
                          const ExpertRouting& routing);
void moe_router_load(View sums, View probs, const int64_t* expert_of, int64_t top_k,
                     const uint8_t* padding);

}  // namespace sft::ops::cuda
