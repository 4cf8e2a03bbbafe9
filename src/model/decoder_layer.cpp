// The decoder layer: binding its blocks, carving, and the residual stream between the blocks.
// See decoder_layer.h.
#include "model/decoder_layer.h"

#include <string>

#include "core/error.h"
#include "ops/ops.h"

namespace sft::model {

namespace {

Linear linear(const ParameterSet& p, ParamSlot w, ParamSlot b, int layer) {
  return Linear{&p.at(w, layer), p.find(b, layer)};
}

}  // namespace

DecoderLayer DecoderLayer::bind(const ParameterSet& p, const ModelConfig& c, int layer,
                                const TensorParallel& tp, ops::View norm_weight_scratch) {
  DecoderLayer d;
  d.plan = LayerPlan::of(c, layer, "the model config");
  const LayerPlan& plan = d.plan;
  if (plan.norm_weight_offset != 0 && norm_weight_scratch.empty())
    fail("model", "(1 + w) norms need the model's norm-weight scratch");
  auto norm = [&](ParamSlot slot, bool present) {
    if (!present) return RmsNormBlock{};
    return RmsNormBlock{&p.at(slot, layer), c.rms_norm_eps, plan.norm_weight_offset,
                        norm_weight_scratch};
  };
  d.attn_norm = norm(ParamSlot::kInputNorm, plan.norms.pre);
  d.attn_out_norm = norm(ParamSlot::kAttnOutNorm, plan.norms.post);
  d.mlp_norm = norm(ParamSlot::kPostNorm, plan.norms.pre);
  d.mlp_out_norm = norm(ParamSlot::kMlpOutNorm, plan.norms.post);

  AttentionBlock& a = d.attention;
  a.q = linear(p, ParamSlot::kQ, ParamSlot::kQBias, layer);
  a.k = linear(p, ParamSlot::kK, ParamSlot::kKBias, layer);
  a.v = linear(p, ParamSlot::kV, ParamSlot::kVBias, layer);
  a.o = linear(p, ParamSlot::kO, ParamSlot::kOBias, layer);
  a.q_norm = norm(ParamSlot::kQNorm, plan.qk_norm);
  a.k_norm = norm(ParamSlot::kKNorm, plan.qk_norm);
  a.qk_norm_over_projection = plan.qk_norm_over_projection;
  a.qk_norm_output_rounded = plan.qk_norm_output_rounded;
  a.dims = {.H = c.num_attention_heads / tp.size,
            .Hkv = c.num_key_value_heads / tp.size,
            .D = c.head_dim,
            .window = plan.window,
            .scale = plan.attention_scale,
            .softcap = plan.softcap};
  a.rotary_dims = plan.rotary_dims;
  a.query_scaling = plan.query_scaling;
  if (plan.sinks) a.sinks = &p.at(ParamSlot::kSinks, layer);

  GatedMlpBlock& m = d.mlp;
  m.activation = plan.activation;
  if (plan.experts) {
    MoeMlpBlock& e = d.moe;
    e.router = Linear{&p.at(ParamSlot::kRouter, layer), p.find(ParamSlot::kRouterBias, layer)};
    e.gate_up_bias = p.find(ParamSlot::kExpertsGateUpBias, layer);
    e.down_bias = p.find(ParamSlot::kExpertsDownBias, layer);
    e.swiglu_limit = c.swiglu_limit;
    e.swiglu_alpha = c.swiglu_alpha;
    e.gate_up.base = &p.at(ParamSlot::kExpertsGateUp, layer);
    e.down.base = &p.at(ParamSlot::kExpertsDown, layer);
    e.experts = c.num_experts;
    e.top_k = c.num_experts_per_tok;
    e.I = c.moe_intermediate_size;
    e.normalize = c.norm_topk_prob;
    if (plan.activation != MlpActivation::kSilu)
      fail("model", "the experts' MLP is SwiGLU (hidden_act silu), not " + c.hidden_act);
  } else {
    m.gate = linear(p, ParamSlot::kGate, ParamSlot::kGateBias, layer);
    m.up = linear(p, ParamSlot::kUp, ParamSlot::kUpBias, layer);
    m.down = linear(p, ParamSlot::kDown, ParamSlot::kDownBias, layer);
  }

  a.o.sum_output = m.down.sum_output = a.tp_group = m.tp_group = tp.group;
  return d;
}

LayerActivations carve_layer_activations(Carver& cv, const LayerShape& s, bool own_kv) {
  LayerActivations a;
  a.ln1 = take_view(cv, s.compute, s.T, s.C);
  a.rstd1 = take_f32(cv, s.T, 1);
  a.attn = AttentionBlock::carve_saved(cv, s, own_kv);
  if (s.post_norms) {
    a.attn_out = take_f32(cv, s.T, s.C);
    a.attn_out_rstd = take_f32(cv, s.T, 1);
  }
  a.x_mid = take_f32(cv, s.T, s.C);
  a.ln2 = take_view(cv, s.compute, s.T, s.C);
  a.rstd2 = take_f32(cv, s.T, 1);
  if (s.dense_mlp) a.mlp = GatedMlpBlock::carve_saved(cv, s);
  if (s.moe_mlp) a.moe = MoeMlpBlock::carve_saved(cv, s);
  if (s.post_norms) {
    a.mlp_out = take_f32(cv, s.T, s.C);
    a.mlp_out_rstd = take_f32(cv, s.T, 1);
  }
  return a;
}

LayerScratch carve_layer_scratch(Carver& cv, const LayerShape& s, LayerPass pass) {
  LayerScratch g;
  if (s.post_norms)
    g.z = take_view(cv, s.compute, s.T, s.C);
  else
    g.y = take_f32(cv, s.T, s.C);
  g.attn = AttentionBlock::carve_scratch(cv, s, pass);
  if (s.dense_mlp) g.mlp = GatedMlpBlock::carve_scratch(cv, s, pass == LayerPass::kTrainBackward);
  if (s.moe_mlp) g.moe = MoeMlpBlock::carve_scratch(cv, s, pass == LayerPass::kTrainBackward);
  if (pass != LayerPass::kTrainBackward) return g;
  g.dres = take_f32(cv, s.T, s.C);
  g.dtmp = take_f32(cv, s.T, s.C);
  g.dln = take_f32(cv, s.T, s.C);
  g.grad = BlockGradScratch::carve(cv, s);
  return g;
}

namespace {

// The layer's MLP branch: the dense gated MLP or the experts.
void mlp_forward(const DecoderLayer& w, ops::View out, LayerActivations& a, LayerScratch& s) {
  if (w.plan.experts) return w.moe.forward(out, a.moe, s.moe, a.ln2);
  w.mlp.forward(out, a.mlp, s.mlp, a.ln2);
}

void mlp_backward(const DecoderLayer& w, LayerScratch& g, const LayerActivations& a, ops::View dy) {
  if (w.plan.experts) return w.moe.backward(g.dln, g.moe, a.moe, dy, g.moe_dprobs, a.ln2);
  w.mlp.backward(g.dln, g.mlp, g.grad, a.mlp, dy, a.ln2);
}

// ln = norm(x), or x itself in the compute dtype when the branch has no pre norm.
void pre_norm(const RmsNormBlock& norm, ops::View ln, ops::View rstd, ops::View x) {
  if (norm.bound())
    norm.forward(ln, rstd, x);
  else
    ops::cast(ln, x);
}

// sum = residual + norm(branch_out) (z: the norm's output, compute dtype).
void add_post_norm(const RmsNormBlock& norm, ops::View sum, ops::View z, ops::View rstd,
                   ops::View branch_out, ops::View residual) {
  norm.forward(z, rstd, branch_out);
  ops::cast(sum, residual);
  ops::add(sum, z);
}

// d(layer input) += d through a pre norm (dln: the branch's input gradient; dtmp scratch).
void pre_norm_backward(const RmsNormBlock& norm, ops::View dres, ops::View dtmp, ops::View dln,
                       ops::View x, ops::View rstd) {
  if (!norm.bound()) return ops::add(dres, dln);
  norm.backward(dtmp, dln, x, rstd);
  ops::add(dres, dtmp);
}

// Pre norms, up to the MLP's normed input: attention, its residual add and the MLP's norm.
void attention_half_pre_norms(LayerActivations& a, LayerScratch& s, ops::View x,
                              const AttentionInputs& attn, const DecoderLayer& w) {
  const float m = w.plan.residual_multiplier;
  w.attn_norm.forward(a.ln1, a.rstd1, x);
  // y is scratch that stays in cache (not x_mid, fresh memory every layer); the residual add
  // and the MLP's norm are one pass that writes x_mid.
  const ops::View y = s.y.first(x.rows, x.cols);
  w.attention.forward(y, a.attn, s.attn, a.ln1, attn);
  if (m != 1) ops::scale(y, m);  // Granite: residual + branch · residual_multiplier
  w.mlp_norm.add_forward(a.x_mid, a.ln2, a.rstd2, y, x);
}

void forward_pre_norms(ops::View out, LayerActivations& a, LayerScratch& s, ops::View x,
                       const AttentionInputs& attn, const DecoderLayer& w) {
  const float m = w.plan.residual_multiplier;
  attention_half_pre_norms(a, s, x, attn, w);
  mlp_forward(w, out, a, s);
  if (m != 1) ops::scale(out, m);
  ops::add(out, a.x_mid);
}

void backward_pre_norms(LayerScratch& g, const LayerActivations& a, ops::View x,
                        const AttentionInputs& attn, const DecoderLayer& w) {
  // A branch's output gradient: the residual stream's, or (Granite, m ≠ 1) m times it in dtmp.
  const float m = w.plan.residual_multiplier;
  auto branch_grad = [&] {
    if (m == 1) return g.dres;
    ops::cast(g.dtmp, g.dres);
    ops::scale(g.dtmp, m);
    return g.dtmp;
  };
  // g.dres is d(out): the MLP's output gradient and, through the residual, x_mid's.
  mlp_backward(w, g, a, branch_grad());
  w.mlp_norm.backward(g.dtmp, g.dln, a.x_mid, a.rstd2);
  // d x_mid; under bf16 the add also writes its rounding, o's bf16 output gradient (when the
  // branch reads the stream's gradient itself).
  const bool round = m == 1 && !g.grad.dy16.empty() && w.attention.o.takes_rounded_dy();
  const ops::View dres16 = round ? g.grad.rounded(g.dres) : ops::View{};
  ops::add(g.dres, g.dtmp, dres16);
  w.attention.backward(g.dln, g.attn, g.grad, a.attn, round ? dres16 : branch_grad(), a.ln1, attn);
  w.attn_norm.backward(g.dtmp, g.dln, x, a.rstd1);
  ops::add(g.dres, g.dtmp);  // d(layer input)
}

void forward_post_norms(ops::View out, LayerActivations& a, LayerScratch& s, ops::View x,
                        const AttentionInputs& attn, const DecoderLayer& w) {
  const ops::View z = s.z.first(x.rows, x.cols);
  pre_norm(w.attn_norm, a.ln1, a.rstd1, x);
  w.attention.forward(a.attn_out, a.attn, s.attn, a.ln1, attn);
  add_post_norm(w.attn_out_norm, a.x_mid, z, a.attn_out_rstd, a.attn_out, x);
  pre_norm(w.mlp_norm, a.ln2, a.rstd2, a.x_mid);
  mlp_forward(w, a.mlp_out, a, s);
  add_post_norm(w.mlp_out_norm, out, z, a.mlp_out_rstd, a.mlp_out, a.x_mid);
}

void backward_post_norms(LayerScratch& g, const LayerActivations& a, ops::View x,
                         const AttentionInputs& attn, const DecoderLayer& w) {
  // g.dres is d(out): d(x_mid) through the residual, and the MLP's post norm's output gradient.
  w.mlp_out_norm.backward(g.dtmp, g.dres, a.mlp_out, a.mlp_out_rstd);
  mlp_backward(w, g, a, g.dtmp);
  pre_norm_backward(w.mlp_norm, g.dres, g.dtmp, g.dln, a.x_mid, a.rstd2);
  // g.dres is d(x_mid): d(x) through the residual, and attention's post norm's output gradient.
  w.attn_out_norm.backward(g.dtmp, g.dres, a.attn_out, a.attn_out_rstd);
  w.attention.backward(g.dln, g.attn, g.grad, a.attn, g.dtmp, a.ln1, attn);
  pre_norm_backward(w.attn_norm, g.dres, g.dtmp, g.dln, x, a.rstd1);
}

}  // namespace

void decoder_layer_forward(ops::View out, LayerActivations& a, LayerScratch& s, ops::View x,
                           const AttentionInputs& attn, const DecoderLayer& w) {
  if (w.plan.norms.post) return forward_post_norms(out, a, s, x, attn, w);
  forward_pre_norms(out, a, s, x, attn, w);
}

void decoder_layer_recompute(ops::View out, LayerActivations& a, LayerScratch& s, ops::View x,
                             const AttentionInputs& attn, const DecoderLayer& w, bool mlp_kept) {
  if (w.plan.backward_reads_mlp_output()) return decoder_layer_forward(out, a, s, x, attn, w);
  attention_half_pre_norms(a, s, x, attn, w);
  if (mlp_kept)
    w.mlp.activate(a.mlp);
  else
    w.mlp.forward_saved(a.mlp, s.mlp, a.ln2);
}

void decoder_layer_backward(LayerScratch& g, const LayerActivations& a, ops::View x,
                            const AttentionInputs& attn, const DecoderLayer& w) {
  if (w.plan.norms.post) return backward_post_norms(g, a, x, attn, w);
  backward_pre_norms(g, a, x, attn, w);
}

}  // namespace sft::model
