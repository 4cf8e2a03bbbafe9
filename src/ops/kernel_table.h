// One compute backend's kernels for the view-level ops of ops/ops.h: a table with a slot per op.
//
// ops/dispatch.cpp is the one dispatcher, the same for every device: it finds the device of a
// call's views (ops/device_dispatch.h), takes that device's table and calls the op's slot with
// the ops.h arguments unchanged. A backend is its table and the kernels it points to:
//   - ops/cpu/kernel_table.cpp: every slot (the view checks, then the typed CPU kernels);
//   - ops/cuda/kernel_table.cpp: the slots with a CUDA kernel (ops/cuda/cuda_ops.h);
//   - ops/cuda/without_cuda.cpp in a build without CUDA: an empty table marked not built.
// An empty slot fails naming the op and the device ("[ops] <op>: no CUDA kernel yet ..."), so a
// new op without a kernel on some device is a clear refusal there, not a link error.
//
// A slot's type is the ops.h function's signature (default arguments aside): the dispatcher
// passes its own parameters straight through, so a table entry of another signature does not
// compile.
#pragma once

#include <cstdint>
#include <span>

#include "core/device.h"
#include "ops/ops.h"

namespace sft::ops {

struct KernelTable {
  const char* device = "";  // for messages: "CPU", "CUDA"
  // False for a backend this binary was built without; then `rebuild` says how to get it.
  bool built = true;
  const char* rebuild = "";

  void (*matmul)(View c, View a, View b, bool trans_a, bool trans_b, bool accumulate) = nullptr;
  void (*matmul_4bit)(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate,
                      const LowRankTerm& extra) = nullptr;
  void (*lora_backward_products)(View db, View du, View g, View u, View b) = nullptr;

  void (*rmsnorm_forward)(View out, View rstd, View x, View w, double eps) = nullptr;
  void (*rmsnorm_backward)(View dx, View dw, View dout, View x, View rstd, View w) = nullptr;
  void (*add_rmsnorm_forward)(View sum, View out, View rstd, View a, View b, View w,
                              double eps) = nullptr;

  void (*rope_forward)(View x, View cos, View sin, int64_t head_dim) = nullptr;
  void (*rope_backward)(View dx, View cos, View sin, int64_t head_dim) = nullptr;

  void (*swiglu_forward)(View h, View gate, View up) = nullptr;
  void (*swiglu_backward)(View dgate, View dup, View dh, View gate, View up) = nullptr;
  void (*swiglu_clamped_forward)(View h, View gate, View up, double alpha, double limit) = nullptr;
  void (*swiglu_clamped_backward)(View dgate, View dup, View dh, View gate, View up, double alpha,
                                  double limit) = nullptr;
  void (*gelu_tanh_gated_forward)(View h, View gate, View up) = nullptr;
  void (*gelu_tanh_gated_backward)(View dgate, View dup, View dh, View gate, View up) = nullptr;

  void (*embedding_forward)(View out, const int64_t* ids, View table, VocabShard shard) = nullptr;
  void (*embedding_backward)(View dtable, View dout, const int64_t* ids,
                             VocabShard shard) = nullptr;

  void (*attention_forward)(View out, View lse, View q, View k, View v,
                            std::span<const AttentionSegment> segments, const AttentionDims& dims,
                            Workspace workspace) = nullptr;
  void (*attention_backward)(View dq, View dk, View dv, View dout, View out, View lse, View q,
                             View k, View v, std::span<const AttentionSegment> segments,
                             const AttentionDims& dims, Workspace workspace) = nullptr;
  void (*attention_sinks_forward)(View out, View lse, View sinks) = nullptr;
  void (*attention_sinks_backward)(View dsinks, View dout, View out, View lse,
                                   View sinks) = nullptr;

  LmHeadStats (*lm_head_cross_entropy)(View dx, View dw, View logits, View x, View w,
                                       const int64_t* targets, double scale, Workspace workspace,
                                       VocabShard shard, double softcap) = nullptr;

  void (*add)(View dst, View src, View rounded) = nullptr;
  void (*add_bias)(View y, View b) = nullptr;
  void (*bias_backward)(View db, View dy) = nullptr;

  void (*adamw_update)(View param, View grad, View exp_avg, View exp_avg_sq, const AdamWScalars& k,
                       View bf16_copy) = nullptr;
  void (*adamw_update_slices)(View param, View grad, View exp_avg, View exp_avg_sq,
                              std::span<const ParamSlice> slices, const AdamWScalars& k,
                              View bf16_copy) = nullptr;
  double (*sum_of_squares)(View x) = nullptr;
  void (*scale)(View x, float factor) = nullptr;
  void (*add_scalar)(View x, float c) = nullptr;
  void (*add_uniform_noise)(View x, float magnitude, uint64_t seed, uint64_t stream,
                            uint64_t position) = nullptr;
  void (*dropout)(View dst, View src, float p, uint64_t seed, uint64_t stream, uint64_t position,
                  bool accumulate) = nullptr;

  void (*zero)(View x) = nullptr;
  void (*cast)(View dst, View src) = nullptr;

  void (*moe_router_forward)(View probs, View weights, int64_t* expert_of, View logits,
                             int64_t top_k, bool normalize) = nullptr;
  void (*moe_router_backward)(View dlogits, View dweights, View dprobs, View probs,
                              const int64_t* expert_of, bool normalize) = nullptr;
  void (*moe_permute_forward)(View xs, View x, const ExpertRouting& routing) = nullptr;
  void (*moe_permute_backward)(View dx, View dxs, const ExpertRouting& routing) = nullptr;
  void (*grouped_matmul)(View c, View a, View w, const ExpertRouting& routing, ExpertBlock block,
                         bool trans_w, bool accumulate) = nullptr;
  void (*grouped_matmul_weight_grad)(View dw, View dy, View x, const ExpertRouting& routing,
                                     ExpertBlock block) = nullptr;
  void (*moe_combine_forward)(View out, View ys, View weights,
                              const ExpertRouting& routing) = nullptr;
  void (*moe_combine_backward)(View dys, View dweights, View dout, View ys, View weights,
                               const ExpertRouting& routing) = nullptr;
  void (*moe_router_load)(View sums, View probs, const int64_t* expert_of, int64_t top_k,
                          const uint8_t* padding) = nullptr;
};

// The backends' tables (each defined by its backend) and the one for a device.
const KernelTable& cpu_kernels();
const KernelTable& cuda_kernels();
const KernelTable& kernels_for(Device device);

}  // namespace sft::ops
