// MoeMlpBlock: carve plans, forward, backward. See moe_block.h.
#include "model/blocks/moe_block.h"

#include "core/arena.h"
#include "model/blocks/moe_expert_bias.h"
#include "ops/ops.h"

namespace sft::model {

namespace {

int64_t* take_ids(Carver& cv, int64_t n) {
  return cv.take<int64_t>(n);
}

// ops::moe_sort_tokens on the router's ids. On a device through a host mirror of the span
// expert_of … token_of (carve_saved takes the four arrays one after another): the ids down,
// the sorted offsets, row_of and token_of up in one copy.
void sort_tokens(MoeMlpBlock::Saved& a, int64_t T, int64_t k, int64_t E) {
  const Device device = a.probs.device;
  if (device == Device::kCpu)
    return ops::moe_sort_tokens(a.offsets, a.row_of, a.token_of, a.expert_of, T, k, E);
  int64_t* const base = a.expert_of;
  const auto at = [&](const int64_t* p) { return static_cast<size_t>(p - base); };
  a.host.resize(at(a.token_of + T * k));
  int64_t* const host = a.host.data();
  const size_t id_bytes = static_cast<size_t>(T * k) * sizeof(int64_t);
  copy_bytes(host, Device::kCpu, base, device, id_bytes);
  ops::moe_sort_tokens(host + at(a.offsets), host + at(a.row_of), host + at(a.token_of), host, T, k,
                       E);
  copy_bytes(a.offsets, device, host + at(a.offsets), Device::kCpu,
             (a.host.size() - at(a.offsets)) * sizeof(int64_t));
}

// The experts' share of the block's scratch (member by member: g++ warns on designated
// initializers that leave members to their defaults).
MoeMlpBlock::ExpertScratch forward_scratch(const MoeMlpBlock::Scratch& s) {
  MoeMlpBlock::ExpertScratch e;
  e.gate32 = s.gate32;
  e.up32 = s.up32;
  return e;
}

MoeMlpBlock::ExpertScratch backward_scratch(const MoeMlpBlock::Scratch& s) {
  MoeMlpBlock::ExpertScratch e;
  e.dh = s.dh;
  e.dgate = s.dgate;
  e.dup = s.dup;
  e.dys16 = s.dys16;
  e.dgate16 = s.dgate16;
  e.dup16 = s.dup16;
  return e;
}

}  // namespace

ops::ExpertRouting MoeMlpBlock::Saved::routing() const {
  return {probs.rows, weights.cols, probs.cols, expert_of, offsets, row_of, token_of};
}

std::span<const int64_t> MoeMlpBlock::Saved::host_offsets() const {
  const auto n = static_cast<size_t>(probs.cols + 1);
  if (probs.device == Device::kCpu) return {offsets, n};
  return {host.data() + (offsets - expert_of), n};  // sort_tokens' mirror of the span
}

MoeMlpBlock::Saved MoeMlpBlock::carve_saved(Carver& cv, const LayerShape& s) {
  Saved a;
  const int64_t R = s.routed_rows();
  a.probs = take_f32(cv, s.T, s.E);
  a.weights = take_f32(cv, s.T, s.K);
  a.expert_of = take_ids(cv, R);
  a.offsets = take_ids(cv, s.E + 1);
  a.row_of = take_ids(cv, R);
  a.token_of = take_ids(cv, R);
  a.xs = take_view(cv, s.compute, R, s.C);
  if (!s.expert_rows_elsewhere) {
    a.gate = take_view(cv, s.compute, R, s.Ie);
    a.up = take_view(cv, s.compute, R, s.Ie);
    a.h = take_view(cv, s.compute, R, s.Ie);
  }
  a.ys = take_f32(cv, R, s.C);
  return a;
}

MoeMlpBlock::Scratch MoeMlpBlock::carve_scratch(Carver& cv, const LayerShape& s, bool backward) {
  Scratch g;
  const int64_t R = s.routed_rows();
  g.logits = take_f32(cv, s.T, s.E);
  const bool expert_rows = !s.expert_rows_elsewhere;  // else ExpertParallel's scratch has them
  if (s.bf16() && expert_rows) {
    g.gate32 = take_f32(cv, R, s.Ie);
    g.up32 = take_f32(cv, R, s.Ie);
  }
  if (!backward) return g;
  g.dys = take_f32(cv, R, s.C);
  g.dxs = take_f32(cv, R, s.C);
  g.dweights = take_f32(cv, s.T, s.K);
  if (expert_rows) {
    g.dh = take_f32(cv, R, s.Ie);
    g.dgate = take_f32(cv, R, s.Ie);
    g.dup = take_f32(cv, R, s.Ie);
  }
  if (s.bf16()) {
    if (expert_rows) {
      g.dys16 = take_view(cv, DType::kBF16, R, s.C);
      g.dgate16 = take_view(cv, DType::kBF16, R, s.Ie);
      g.dup16 = take_view(cv, DType::kBF16, R, s.Ie);
    }
    g.dlogits16 = take_view(cv, DType::kBF16, s.T, s.E);
  }
  return g;
}

void MoeMlpBlock::add_gate_up_bias(ops::View gate, ops::View up,
                                   std::span<const int64_t> offsets) const {
  if (!gate_up_bias) return;
  add_expert_bias(gate, gate_up_bias->value, offsets, 0);
  add_expert_bias(up, gate_up_bias->value, offsets, I);
}

void MoeMlpBlock::forward(ops::View y, Saved& a, const Scratch& s, ops::View ln) const {
  const int64_t T = ln.rows;
  const ops::View logits = s.logits.first(T, experts);
  router.forward(logits, ln);
  ops::moe_router_forward(a.probs, a.weights, a.expert_of, logits, top_k, normalize);
  sort_tokens(a, T, top_k, experts);
  const ops::ExpertRouting r = a.routing();
  ops::moe_permute_forward(a.xs, ln, r);
  if (ep)
    exchange_forward(a);
  else
    experts_forward(a.ys, {a.xs, a.gate, a.up, a.h}, forward_scratch(s), r, a.host_offsets());
  ops::moe_combine_forward(y, a.ys, a.weights, r);
}

void MoeMlpBlock::experts_forward(ops::View ys, const ExpertRows& x, const ExpertScratch& s,
                                  const ops::ExpertRouting& r,
                                  std::span<const int64_t> offsets) const {
  const int64_t N = x.xs.rows;
  const ops::View w_gu = gate_up.weights(x.xs.dtype), w_down = down.weights(x.xs.dtype);
  const ops::ExpertBlock gate_rows{I, 2 * I, 0}, up_rows{I, 2 * I, I};
  const ops::ExpertBlock down_rows{ys.cols, ys.cols, 0};
  if (x.gate.dtype == DType::kBF16) {  // fp32 products, rounded as autocast stores them
    const ops::View gate32 = s.gate32.first(N, I), up32 = s.up32.first(N, I);
    ops::grouped_matmul(gate32, x.xs, w_gu, r, gate_rows, true, false);
    ops::grouped_matmul(up32, x.xs, w_gu, r, up_rows, true, false);
    add_gate_up_bias(gate32, up32, offsets);
    ops::cast(x.gate, gate32);
    ops::cast(x.up, up32);
  } else {
    ops::grouped_matmul(x.gate, x.xs, w_gu, r, gate_rows, true, false);
    ops::grouped_matmul(x.up, x.xs, w_gu, r, up_rows, true, false);
    add_gate_up_bias(x.gate, x.up, offsets);
  }
  if (swiglu_limit > 0)
    ops::swiglu_clamped_forward(x.h, x.gate, x.up, swiglu_alpha, swiglu_limit);
  else
    ops::swiglu_forward(x.h, x.gate, x.up);
  ops::grouped_matmul(ys, x.h, w_down, r, down_rows, true, false);
  if (down_bias) add_expert_bias(ys, down_bias->value, offsets, 0);
}

void MoeMlpBlock::backward(ops::View dln, const Scratch& s, const Saved& a, ops::View dy,
                           ops::View dprobs, ops::View ln) const {
  poison_if_checking({s.dys, s.dxs, s.dweights, s.dh, s.dgate, s.dup});
  const int64_t T = ln.rows;
  const ops::ExpertRouting r = a.routing();
  ops::moe_combine_backward(s.dys, s.dweights, dy, a.ys, a.weights, r);
  if (ep)
    exchange_backward(s, a);
  else
    experts_backward(s.dxs, s.dys, backward_scratch(s), {a.xs, a.gate, a.up, a.h}, r,
                     a.host_offsets());
  ops::moe_permute_backward(dln, s.dxs, r);
  // The router: through the top-k weights (and the load-balancing loss's dprobs), its softmax,
  // then the projection (dln +=).
  const ops::View dlogits = s.logits.first(T, experts);
  ops::moe_router_backward(dlogits, s.dweights, dprobs, a.probs, a.expert_of, normalize);
  router.backward(dln, dlogits, ln, a.xs.dtype == DType::kBF16 ? s.dlogits16 : ops::View{}, true);
}

void MoeMlpBlock::experts_backward(ops::View dxs, ops::View dys_f32, const ExpertScratch& s,
                                   const ExpertRows& x, const ops::ExpertRouting& r,
                                   std::span<const int64_t> offsets) const {
  const int64_t C = dxs.cols;
  const bool bf16 = x.h.dtype == DType::kBF16;
  const ops::ExpertBlock gate_rows{I, 2 * I, 0}, up_rows{I, 2 * I, I}, down_rows{C, C, 0};
  const ops::View w_gu = gate_up.weights(x.xs.dtype), w_down = down.weights(x.xs.dtype);
  if (down_bias && !down_bias->grad.empty())
    expert_bias_backward(down_bias->grad, dys_f32, offsets, 0);
  // The down projection: dh = dys · W_down,e; dW_down,e += dys_eᵀ h_e (bf16: dys rounded).
  ops::View dys = dys_f32;
  if (bf16) {
    ops::cast(s.dys16, dys_f32);
    dys = s.dys16;
  }
  ops::grouped_matmul(s.dh, dys, w_down, r, down_rows, false, false);
  if (const ops::View dw_down = down.weight_grad(); !dw_down.empty()) {
    ops::grouped_matmul_weight_grad(dw_down, dys, x.h, r, down_rows);
    down.finish_weight_grad();
  }
  ops::View dgate = s.dgate, dup = s.dup;
  // Under bf16 rounded by SwiGLU's backward itself, unless the biases' gradients need the
  // fp32 values first (then rounded after them).
  const bool bias_grads = gate_up_bias && !gate_up_bias->grad.empty();
  if (bf16 && !bias_grads) dgate = s.dgate16, dup = s.dup16;
  if (swiglu_limit > 0)
    ops::swiglu_clamped_backward(dgate, dup, s.dh, x.gate, x.up, swiglu_alpha, swiglu_limit);
  else
    ops::swiglu_backward(dgate, dup, s.dh, x.gate, x.up);
  if (bias_grads) {
    expert_bias_backward(gate_up_bias->grad, dgate, offsets, 0);
    expert_bias_backward(gate_up_bias->grad, dup, offsets, I);
    if (bf16) {
      ops::cast(s.dgate16, dgate);
      ops::cast(s.dup16, dup);
      dgate = s.dgate16, dup = s.dup16;
    }
  }
  ops::grouped_matmul(dxs, dgate, w_gu, r, gate_rows, false, false);
  ops::grouped_matmul(dxs, dup, w_gu, r, up_rows, false, true);
  if (const ops::View dw_gu = gate_up.weight_grad(); !dw_gu.empty()) {
    ops::grouped_matmul_weight_grad(dw_gu, dgate, x.xs, r, gate_rows);
    ops::grouped_matmul_weight_grad(dw_gu, dup, x.xs, r, up_rows);
    gate_up.finish_weight_grad();
  }
}

}  // namespace sft::model
