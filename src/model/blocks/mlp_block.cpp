// GatedMlpBlock: carve plans, forward, backward. See mlp_block.h.
#include "model/blocks/mlp_block.h"

#include "ops/ops.h"

namespace sft::model {

GatedMlpBlock::Saved GatedMlpBlock::carve_saved(Carver& cv, const LayerShape& s) {
  return {take_view(cv, s.compute, s.T, s.I), take_view(cv, s.compute, s.T, s.I),
          take_view(cv, s.compute, s.T, s.I)};
}

GatedMlpBlock::Scratch GatedMlpBlock::carve_scratch(Carver& cv, const LayerShape& s,
                                                    bool backward) {
  Scratch g;
  // The fp32 (T, I) outputs, or two bf16 (T, I) gradients: the same bytes.
  if (s.bf16()) g.projections = SharedScratch::take(cv, static_cast<size_t>(s.T * s.I) * 4);
  if (!backward) return g;
  g.dh = take_f32(cv, s.T, s.I);
  g.dgate = take_f32(cv, s.T, s.I);
  g.dup = take_f32(cv, s.T, s.I);
  return g;
}

void GatedMlpBlock::forward(ops::View y, Saved& a, const Scratch& s, ops::View ln) const {
  forward_saved(a, s, ln);
  down.forward(y, a.h);
}

void GatedMlpBlock::forward_saved(Saved& a, const Scratch& s, ops::View ln) const {
  // Under bf16 gate and up go through the fp32 role of `projections` into their bf16 copies,
  // or, on a 4-bit base, the product writes the rounded copy itself.
  s.projections.hand_over();
  auto project = [&](const Linear& lin, ops::View saved) {
    if (saved.dtype != DType::kBF16 || lin.writes_rounded_output()) return lin.forward(saved, ln);
    const ops::View y32 = s.projections.role(DType::kF32, saved.rows, saved.cols);
    lin.forward(y32, ln);
    ops::cast(saved, y32);
  };
  project(gate, a.gate);
  project(up, a.up);
  activate(a);
}

void GatedMlpBlock::activate(Saved& a) const {
  // bf16 h: rounded by the gated activation itself
  if (activation == MlpActivation::kGeluTanh)
    ops::gelu_tanh_gated_forward(a.h, a.gate, a.up);
  else
    ops::swiglu_forward(a.h, a.gate, a.up);
}

void GatedMlpBlock::backward(ops::View dln, const Scratch& s, const BlockGradScratch& g,
                             const Saved& a, ops::View dy, ops::View ln) const {
  poison_if_checking({s.dh, s.dgate, s.dup});
  down.backward(s.dh, dy, a.h, g.rounded(dy));
  // Under bf16 gate and up read their output gradients only rounded (unless a bias gradient
  // needs fp32): SwiGLU's backward writes them rounded, in the same pass.
  const bool rounded = !s.projections.empty() && gate.takes_rounded_dy() && up.takes_rounded_dy();
  ops::View dgate = s.dgate, dup = s.dup;
  if (rounded) {
    s.projections.hand_over();
    const int64_t T = a.gate.rows, I = a.gate.cols;
    dgate = s.projections.role(DType::kBF16, T, I);
    dup = s.projections.role(DType::kBF16, T, I, static_cast<size_t>(T * I) * sizeof(uint16_t));
  }
  if (activation == MlpActivation::kGeluTanh)
    ops::gelu_tanh_gated_backward(dgate, dup, s.dh, a.gate, a.up);
  else
    ops::swiglu_backward(dgate, dup, s.dh, a.gate, a.up);
  gate.backward(dln, dgate, ln, g.rounded(dgate));
  up.backward(dln, dup, ln, g.rounded(dup), true);
  if (tp_group) tp_group->sum({dln.as<float>(), static_cast<size_t>(dln.numel())});
}

}  // namespace sft::model
