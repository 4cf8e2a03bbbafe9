// The view-level ops of ops/ops.h, the same for every device: each names itself to the profiler
// (SFT_PROFILE=1), finds the device of its views (one comparison per view; a mix or a column
// block where the kernels take dense views fails, ops/device_dispatch.h) and calls that device's
// kernel from its backend's table (ops/kernel_table.h). Nothing here knows a backend: the view
// checks (dtypes, shapes) are the kernels', which fail with the op's name.
#include <string>

#include "core/error.h"
#include "ops/device_dispatch.h"
#include "ops/kernel_table.h"
#include "ops/ops.h"
#include "ops/profile.h"

namespace sft::ops {

const KernelTable& kernels_for(Device device) {
  return device == Device::kCuda ? cuda_kernels() : cpu_kernels();
}

namespace {

// The kernel in `slot` of the table of the views' device; fails naming the op when that
// backend was not built or has no such kernel.
template <typename Kernel>
Kernel kernel(Kernel KernelTable::*slot, const char* op, std::initializer_list<View> views,
              Strides strides = Strides::kDenseOnly) {
  const KernelTable& table = kernels_for(device_of(op, views, strides));
  if (!table.built)
    fail("ops", std::string(op) + ": a " + table.device + " view, but sft was built without " +
                    table.device + "; " + table.rebuild);
  const Kernel k = table.*slot;
  if (!k)
    fail("ops", std::string(op) + ": no " + table.device +
                    " kernel yet (docs/cuda.md lists what each backend has)");
  return k;
}

struct MatmulCall {
  const View &c, &a;
  int64_t K;
  bool ta, tb;
};

std::string matmul_detail(const void* p) {
  const MatmulCall& m = *static_cast<const MatmulCall*>(p);
  return std::string(dtype_name(m.a.dtype)) + " M=" + std::to_string(m.c.rows) +
         " N=" + std::to_string(m.c.cols) + " K=" + std::to_string(m.K) + (m.ta ? " ta" : "") +
         (m.tb ? " tb" : "");
}

}  // namespace

// Strides::kRowStrides below: the kernels of these ops walk row strides (column blocks).

void matmul(View c, View a, View b, bool trans_a, bool trans_b, bool accumulate) {
  const MatmulCall call{c, a, trans_a ? a.rows : a.cols, trans_a, trans_b};
  const ScopedOp op("matmul", matmul_detail, &call);
  kernel(&KernelTable::matmul, "matmul", {c, a, b}, Strides::kRowStrides)(c, a, b, trans_a, trans_b,
                                                                          accumulate);
}

void matmul_4bit(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate,
                 const LowRankTerm& extra) {
  const ScopedOp op("matmul_4bit");
  kernel(&KernelTable::matmul_4bit, "matmul_4bit", {c, a, w.packed, w.absmax, extra.a, extra.b},
         Strides::kRowStrides)(c, a, w, trans_w, accumulate, extra);
}

void lora_backward_products(View db, View du, View g, View u, View b) {
  const ScopedOp op("lora_backward_products");
  kernel(&KernelTable::lora_backward_products, "lora_backward_products", {db, du, g, u, b},
         Strides::kRowStrides)(db, du, g, u, b);
}

void rmsnorm_forward(View out, View rstd, View x, View w, double eps) {
  const ScopedOp op("rmsnorm_forward");
  kernel(&KernelTable::rmsnorm_forward, "rmsnorm_forward", {out, rstd, x, w})(out, rstd, x, w, eps);
}

void rmsnorm_backward(View dx, View dw, View dout, View x, View rstd, View w) {
  const ScopedOp op("rmsnorm_backward");
  kernel(&KernelTable::rmsnorm_backward, "rmsnorm_backward", {dx, dw, dout, x, rstd, w})(
      dx, dw, dout, x, rstd, w);
}

void add_rmsnorm_forward(View sum, View out, View rstd, View a, View b, View w, double eps) {
  const ScopedOp op("add_rmsnorm_forward");
  kernel(&KernelTable::add_rmsnorm_forward, "add_rmsnorm_forward", {sum, out, rstd, a, b, w})(
      sum, out, rstd, a, b, w, eps);
}

void rope_forward(View x, View cos, View sin, int64_t head_dim) {
  const ScopedOp op("rope_forward");
  kernel(&KernelTable::rope_forward, "rope_forward", {x, cos, sin}, Strides::kRowStrides)(
      x, cos, sin, head_dim);
}

void rope_backward(View dx, View cos, View sin, int64_t head_dim) {
  const ScopedOp op("rope_backward");
  kernel(&KernelTable::rope_backward, "rope_backward", {dx, cos, sin}, Strides::kRowStrides)(
      dx, cos, sin, head_dim);
}

void swiglu_forward(View h, View gate, View up) {
  const ScopedOp op("swiglu_forward");
  kernel(&KernelTable::swiglu_forward, "swiglu_forward", {h, gate, up})(h, gate, up);
}

void swiglu_backward(View dgate, View dup, View dh, View gate, View up) {
  const ScopedOp op("swiglu_backward");
  kernel(&KernelTable::swiglu_backward, "swiglu_backward", {dgate, dup, dh, gate, up})(
      dgate, dup, dh, gate, up);
}

void swiglu_clamped_forward(View h, View gate, View up, double alpha, double limit) {
  const ScopedOp op("swiglu_clamped_forward");
  kernel(&KernelTable::swiglu_clamped_forward, "swiglu_clamped_forward", {h, gate, up})(
      h, gate, up, alpha, limit);
}

void swiglu_clamped_backward(View dgate, View dup, View dh, View gate, View up, double alpha,
                             double limit) {
  const ScopedOp op("swiglu_clamped_backward");
  kernel(&KernelTable::swiglu_clamped_backward, "swiglu_clamped_backward",
         {dgate, dup, dh, gate, up})(dgate, dup, dh, gate, up, alpha, limit);
}

void gelu_tanh_gated_forward(View h, View gate, View up) {
  const ScopedOp op("gelu_tanh_gated_forward");
  kernel(&KernelTable::gelu_tanh_gated_forward, "gelu_tanh_gated_forward", {h, gate, up})(h, gate,
                                                                                          up);
}

void gelu_tanh_gated_backward(View dgate, View dup, View dh, View gate, View up) {
  const ScopedOp op("gelu_tanh_gated_backward");
  kernel(&KernelTable::gelu_tanh_gated_backward, "gelu_tanh_gated_backward",
         {dgate, dup, dh, gate, up})(dgate, dup, dh, gate, up);
}

void embedding_forward(View out, const int64_t* ids, View table, VocabShard shard) {
  const ScopedOp op("embedding_forward");
  kernel(&KernelTable::embedding_forward, "embedding_forward", {out, table})(out, ids, table,
                                                                             shard);
}

void embedding_backward(View dtable, View dout, const int64_t* ids, VocabShard shard) {
  const ScopedOp op("embedding_backward");
  kernel(&KernelTable::embedding_backward, "embedding_backward", {dtable, dout})(dtable, dout, ids,
                                                                                 shard);
}

void attention_forward(View out, View lse, View q, View k, View v,
                       std::span<const AttentionSegment> segments, const AttentionDims& dims,
                       Workspace workspace) {
  const ScopedOp op("attention_forward");
  kernel(&KernelTable::attention_forward, "attention_forward", {out, lse, q, k, v})(
      out, lse, q, k, v, segments, dims, workspace);
}

void attention_backward(View dq, View dk, View dv, View dout, View out, View lse, View q, View k,
                        View v, std::span<const AttentionSegment> segments,
                        const AttentionDims& dims, Workspace workspace) {
  const ScopedOp op("attention_backward");
  kernel(&KernelTable::attention_backward, "attention_backward",
         {dq, dk, dv, dout, out, lse, q, k, v})(dq, dk, dv, dout, out, lse, q, k, v, segments, dims,
                                                workspace);
}

void attention_sinks_forward(View out, View lse, View sinks) {
  const ScopedOp op("attention_sinks_forward");
  kernel(&KernelTable::attention_sinks_forward, "attention_sinks_forward", {out, lse, sinks})(
      out, lse, sinks);
}

void attention_sinks_backward(View dsinks, View dout, View out, View lse, View sinks) {
  const ScopedOp op("attention_sinks_backward");
  kernel(&KernelTable::attention_sinks_backward, "attention_sinks_backward",
         {dsinks, dout, out, lse, sinks})(dsinks, dout, out, lse, sinks);
}

LmHeadStats lm_head_cross_entropy(View dx, View dw, View logits, View x, View w,
                                  const int64_t* targets, double scale, Workspace workspace,
                                  VocabShard shard, double softcap) {
  const ScopedOp op("lm_head_cross_entropy");
  if (shard.weight_blocks && x.device != Device::kCpu)
    fail("ops", "lm_head_cross_entropy: weight blocks on " + std::string(device_name(x.device)) +
                    " (hint: ZeRO-3 gathers the head a block at a time on the CPU only)");
  return kernel(&KernelTable::lm_head_cross_entropy, "lm_head_cross_entropy",
                {dx, dw, logits, x, w})(dx, dw, logits, x, w, targets, scale, workspace, shard,
                                        softcap);
}

void add(View dst, View src, View rounded) {
  const ScopedOp op("add");
  kernel(&KernelTable::add, "add", {dst, src, rounded})(dst, src, rounded);
}

void add_bias(View y, View b) {
  const ScopedOp op("add_bias");
  kernel(&KernelTable::add_bias, "add_bias", {y, b})(y, b);
}

void bias_backward(View db, View dy) {
  const ScopedOp op("bias_backward");
  kernel(&KernelTable::bias_backward, "bias_backward", {db, dy})(db, dy);
}

void adamw_update(View param, View grad, View exp_avg, View exp_avg_sq, const AdamWScalars& k,
                  View bf16_copy) {
  const ScopedOp op("adamw_update");
  kernel(&KernelTable::adamw_update, "adamw_update", {param, grad, exp_avg, exp_avg_sq, bf16_copy})(
      param, grad, exp_avg, exp_avg_sq, k, bf16_copy);
}

void adamw_update_slices(View param, View grad, View exp_avg, View exp_avg_sq,
                         std::span<const ParamSlice> slices, const AdamWScalars& k,
                         View bf16_copy) {
  const ScopedOp op("adamw_update_slices");
  kernel(&KernelTable::adamw_update_slices, "adamw_update_slices",
         {param, grad, exp_avg, exp_avg_sq, bf16_copy})(param, grad, exp_avg, exp_avg_sq, slices, k,
                                                        bf16_copy);
}

double sum_of_squares(View x) {
  const ScopedOp op("sum_of_squares");
  return kernel(&KernelTable::sum_of_squares, "sum_of_squares", {x})(x);
}

void scale(View x, float factor) {
  const ScopedOp op("scale");
  kernel(&KernelTable::scale, "scale", {x})(x, factor);
}

void add_scalar(View x, float c) {
  const ScopedOp op("add_scalar");
  kernel(&KernelTable::add_scalar, "add_scalar", {x})(x, c);
}

void add_uniform_noise(View x, float magnitude, uint64_t seed, uint64_t stream, uint64_t position) {
  const ScopedOp op("add_uniform_noise");
  kernel(&KernelTable::add_uniform_noise, "add_uniform_noise", {x})(x, magnitude, seed, stream,
                                                                    position);
}

void dropout(View dst, View src, float p, uint64_t seed, uint64_t stream, uint64_t position,
             bool accumulate) {
  const ScopedOp op("dropout");
  kernel(&KernelTable::dropout, "dropout", {dst, src})(dst, src, p, seed, stream, position,
                                                       accumulate);
}

void zero(View x) {
  const ScopedOp op("zero");
  kernel(&KernelTable::zero, "zero", {x})(x);
}

void cast(View dst, View src) {
  const ScopedOp op("cast");
  kernel(&KernelTable::cast, "cast", {dst, src}, Strides::kRowStrides)(dst, src);
}

// Mixture of experts: the routing arrays are on the views' device (ops/moe.h); the views
// dispatch.

void moe_router_forward(View probs, View weights, int64_t* expert_of, View logits, int64_t top_k,
                        bool normalize) {
  const ScopedOp op("moe_router_forward");
  kernel(&KernelTable::moe_router_forward, "moe_router_forward", {probs, weights, logits})(
      probs, weights, expert_of, logits, top_k, normalize);
}

void moe_router_backward(View dlogits, View dweights, View dprobs, View probs,
                         const int64_t* expert_of, bool normalize) {
  const ScopedOp op("moe_router_backward");
  kernel(&KernelTable::moe_router_backward, "moe_router_backward",
         {dlogits, dweights, dprobs, probs})(dlogits, dweights, dprobs, probs, expert_of,
                                             normalize);
}

void moe_permute_forward(View xs, View x, const ExpertRouting& routing) {
  const ScopedOp op("moe_permute_forward");
  kernel(&KernelTable::moe_permute_forward, "moe_permute_forward", {xs, x})(xs, x, routing);
}

void moe_permute_backward(View dx, View dxs, const ExpertRouting& routing) {
  const ScopedOp op("moe_permute_backward");
  kernel(&KernelTable::moe_permute_backward, "moe_permute_backward", {dx, dxs})(dx, dxs, routing);
}

void grouped_matmul(View c, View a, View w, const ExpertRouting& routing, ExpertBlock block,
                    bool trans_w, bool accumulate) {
  const ScopedOp op("grouped_matmul");
  kernel(&KernelTable::grouped_matmul, "grouped_matmul", {c, a, w})(c, a, w, routing, block,
                                                                    trans_w, accumulate);
}

void grouped_matmul_weight_grad(View dw, View dy, View x, const ExpertRouting& routing,
                                ExpertBlock block) {
  const ScopedOp op("grouped_matmul_weight_grad");
  kernel(&KernelTable::grouped_matmul_weight_grad, "grouped_matmul_weight_grad", {dw, dy, x})(
      dw, dy, x, routing, block);
}

void moe_combine_forward(View out, View ys, View weights, const ExpertRouting& routing) {
  const ScopedOp op("moe_combine_forward");
  kernel(&KernelTable::moe_combine_forward, "moe_combine_forward", {out, ys, weights})(
      out, ys, weights, routing);
}

void moe_combine_backward(View dys, View dweights, View dout, View ys, View weights,
                          const ExpertRouting& routing) {
  const ScopedOp op("moe_combine_backward");
  kernel(&KernelTable::moe_combine_backward, "moe_combine_backward",
         {dys, dweights, dout, ys, weights})(dys, dweights, dout, ys, weights, routing);
}

void moe_router_load(View sums, View probs, const int64_t* expert_of, int64_t top_k,
                     const uint8_t* padding) {
  const ScopedOp op("moe_router_load");
  kernel(&KernelTable::moe_router_load, "moe_router_load", {sums, probs})(sums, probs, expert_of,
                                                                          top_k, padding);
}

}  // namespace sft::ops
