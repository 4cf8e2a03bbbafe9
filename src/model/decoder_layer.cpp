// The decoder layer: binding its blocks, carving, and the residual stream between the blocks.
// See decoder_layer.h.
#include "model/decoder_layer.h"

#include <string>

namespace sft::model {

namespace {

Linear linear(const ParameterSet& p, ParamSlot w, ParamSlot b, int layer) {
  return Linear{&p.at(w, layer), p.find(b, layer)};
}

}  // namespace

DecoderLayer DecoderLayer::bind(const ParameterSet& p, const ModelConfig& c, int layer,
                                const TensorParallel& tp) {
  DecoderLayer d;
  d.plan = LayerPlan::of(c, layer, "the model config");
  d.attn_norm = {&p.at(ParamSlot::kInputNorm, layer), c.rms_norm_eps};
  d.mlp_norm = {&p.at(ParamSlot::kPostNorm, layer), c.rms_norm_eps};

  AttentionBlock& a = d.attention;
  a.q = linear(p, ParamSlot::kQ, ParamSlot::kQBias, layer);
  a.k = linear(p, ParamSlot::kK, ParamSlot::kKBias, layer);
  a.v = linear(p, ParamSlot::kV, ParamSlot::kVBias, layer);
  a.o = linear(p, ParamSlot::kO, ParamSlot::kOBias, layer);
  if (d.plan.qk_norm) {
    a.q_norm = &p.at(ParamSlot::kQNorm, layer);
    a.k_norm = &p.at(ParamSlot::kKNorm, layer);
  }
  a.dims = {c.num_attention_heads / tp.size, c.num_key_value_heads / tp.size, c.head_dim,
            d.plan.window};
  a.eps = c.rms_norm_eps;

  GatedMlpBlock& m = d.mlp;
  m.gate = linear(p, ParamSlot::kGate, ParamSlot::kGateBias, layer);
  m.up = linear(p, ParamSlot::kUp, ParamSlot::kUpBias, layer);
  m.down = linear(p, ParamSlot::kDown, ParamSlot::kDownBias, layer);
  m.activation = d.plan.activation;

  a.o.sum_output = m.down.sum_output = a.tp_group = m.tp_group = tp.group;
  return d;
}

LayerActivations carve_layer_activations(Carver& cv, const LayerShape& s, bool own_kv) {
  LayerActivations a;
  a.ln1 = take_view(cv, s.compute, s.T, s.C);
  a.rstd1 = take_f32(cv, s.T, 1);
  a.attn = AttentionBlock::carve_saved(cv, s, own_kv);
  a.x_mid = take_f32(cv, s.T, s.C);
  a.ln2 = take_view(cv, s.compute, s.T, s.C);
  a.rstd2 = take_f32(cv, s.T, 1);
  a.mlp = GatedMlpBlock::carve_saved(cv, s);
  return a;
}

LayerScratch carve_layer_scratch(Carver& cv, const LayerShape& s, LayerPass pass) {
  LayerScratch g;
  g.y = take_f32(cv, s.T, s.C);
  g.attn = AttentionBlock::carve_scratch(cv, s, pass);
  g.mlp = GatedMlpBlock::carve_scratch(cv, s, pass == LayerPass::kTrainBackward);
  if (pass != LayerPass::kTrainBackward) return g;
  g.dres = take_f32(cv, s.T, s.C);
  g.dtmp = take_f32(cv, s.T, s.C);
  g.dln = take_f32(cv, s.T, s.C);
  g.grad = BlockGradScratch::carve(cv, s);
  return g;
}

void decoder_layer_forward(ops::View out, LayerActivations& a, LayerScratch& s, ops::View x,
                           const AttentionInputs& attn, const DecoderLayer& w) {
  w.attn_norm.forward(a.ln1, a.rstd1, x);
  // y is scratch that stays in cache (not x_mid, fresh memory every layer); the residual add
  // and the MLP's norm are one pass that writes x_mid.
  const ops::View y = s.y.first(x.rows, x.cols);
  w.attention.forward(y, a.attn, s.attn, a.ln1, attn);
  w.mlp_norm.add_forward(a.x_mid, a.ln2, a.rstd2, y, x);
  w.mlp.forward(out, a.mlp, s.mlp, a.ln2);
  ops::add(out, a.x_mid);
}

void decoder_layer_backward(LayerScratch& g, const LayerActivations& a, ops::View x,
                            const AttentionInputs& attn, const DecoderLayer& w) {
  // g.dres is d(out): the MLP's output gradient and, through the residual, x_mid's.
  w.mlp.backward(g.dln, g.mlp, g.grad, a.mlp, g.dres, a.ln2);
  w.mlp_norm.backward(g.dtmp, g.grad, g.dln, a.x_mid, a.rstd2);
  // d x_mid; under bf16 the add also writes its rounding, o's bf16 output gradient.
  const bool round = !g.grad.dy16.empty() && w.attention.o.takes_rounded_dy();
  const ops::View dres16 = round ? g.grad.rounded(g.dres) : ops::View{};
  ops::add(g.dres, g.dtmp, dres16);
  w.attention.backward(g.dln, g.attn, g.grad, a.attn, round ? dres16 : g.dres, a.ln1, attn);
  w.attn_norm.backward(g.dtmp, g.grad, g.dln, x, a.rstd1);
  ops::add(g.dres, g.dtmp);  // d(layer input)
}

}  // namespace sft::model
