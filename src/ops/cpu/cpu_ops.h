// The CPU backend's kernels on views: sft::ops::cpu::<name> takes the arguments of the ops::
// function of the same name (ops/ops.h), in the same order, with every view on the CPU; they are
// the slots of the CPU kernel table (ops/cpu/kernel_table.cpp). Each checks its views' dtypes and
// shapes and fails naming the op. Dtypes: f32, bf16 where ops.h takes bf16, and f64 (the
// reference and the conformance runs).
#pragma once

#include <cstdint>
#include <span>

#include "ops/ops.h"
#include "ops/view.h"

namespace sft::ops::cpu {

void matmul(View c, View a, View b, bool trans_a, bool trans_b, bool accumulate);
void lora_backward_products(View db, View du, View g, View u, View b);
void matmul_4bit(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate,
                 const LowRankTerm& extra);

void rmsnorm_forward(View out, View rstd, View x, View w, double eps);
void rmsnorm_backward(View dx, View dw, View dout, View x, View rstd, View w);
void add_rmsnorm_forward(View sum, View out, View rstd, View a, View b, View w, double eps);

void rope_forward(View x, View cos, View sin, int64_t head_dim);
void rope_backward(View dx, View cos, View sin, int64_t head_dim);

void swiglu_forward(View h, View gate, View up);
void swiglu_backward(View dgate, View dup, View dh, View gate, View up);
void swiglu_clamped_forward(View h, View gate, View up, double alpha, double limit);
void swiglu_clamped_backward(View dgate, View dup, View dh, View gate, View up, double alpha,
                             double limit);
void gelu_tanh_gated_forward(View h, View gate, View up);
void gelu_tanh_gated_backward(View dgate, View dup, View dh, View gate, View up);

void embedding_forward(View out, const int64_t* ids, View table, VocabShard shard);
void embedding_backward(View dtable, View dout, const int64_t* ids, VocabShard shard);

void attention_forward(View out, View lse, View q, View k, View v,
                       std::span<const AttentionSegment> segments, const AttentionDims& dims,
                       Workspace workspace);
void attention_backward(View dq, View dk, View dv, View dout, View out, View lse, View q, View k,
                        View v, std::span<const AttentionSegment> segments,
                        const AttentionDims& dims, Workspace workspace);
void attention_sinks_forward(View out, View lse, View sinks);
void attention_sinks_backward(View dsinks, View dout, View out, View lse, View sinks);

LmHeadStats lm_head_cross_entropy(View dx, View dw, View logits, View x, View w,
                                  const int64_t* targets, double scale, Workspace workspace,
                                  VocabShard shard, double softcap);

void add(View dst, View src, View rounded);
void add_bias(View y, View b);
void bias_backward(View db, View dy);

void adamw_update(View param, View grad, View exp_avg, View exp_avg_sq, const AdamWScalars& k,
                  View bf16_copy);
void adamw_update_slices(View param, View grad, View exp_avg, View exp_avg_sq,
                         std::span<const ParamSlice> slices, const AdamWScalars& k, View bf16_copy);
double sum_of_squares(View x);
void scale(View x, float factor);
void add_scalar(View x, float c);
void add_uniform_noise(View x, float magnitude, uint64_t seed, uint64_t stream, uint64_t position);
void dropout(View dst, View src, float p, uint64_t seed, uint64_t stream, uint64_t position,
             bool accumulate);

void zero(View x);
void cast(View dst, View src);

// Mixture of experts (ops/cpu/moe_router.cpp, moe_permute.cpp, grouped_matmul.cpp).
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

}  // namespace sft::ops::cpu
