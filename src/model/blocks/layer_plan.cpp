// LayerPlan. See layer_plan.h.
#include "model/blocks/layer_plan.h"

#include <cstdio>

#include "core/error.h"

namespace sft::model {

namespace {

// transformers: int(head_dim * partial_rotary_factor), the dims the rotary tables cover.
int64_t rotary_dims_of(const ModelConfig& c) {
  return static_cast<int64_t>(static_cast<double>(c.head_dim) * c.rope.partial_rotary_factor);
}

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

}  // namespace

LayerPlan LayerPlan::of(const ModelConfig& c, int layer, const std::string& source) {
  LayerPlan p;
  p.norms = {c.pre_norms, c.post_norms};
  if (!p.norms.pre && !p.norms.post)
    fail("model", source + ": a layer needs its pre norms, its post norms or both");
  p.norm_weight_offset = static_cast<float>(c.norm_weight_offset);
  p.qk_norm = c.qk_norm;
  p.qk_norm_over_projection = c.qk_norm && c.qk_norm_over_projection;
  p.qk_norm_output_rounded = c.qk_norm && c.norm_output_in_input_dtype;
  const size_t l = static_cast<size_t>(layer);
  p.rotary_dims = rotary_dims_of(c);
  if (p.rotary_dims <= 0 || p.rotary_dims > c.head_dim || p.rotary_dims % 2 != 0)
    fail("model", source + ": partial_rotary_factor " + number(c.rope.partial_rotary_factor) +
                      " turns " + std::to_string(p.rotary_dims) + " of head_dim " +
                      std::to_string(c.head_dim) + " dims (an even count from 2 to head_dim)");
  if (l < c.layer_rope.size() && !c.layer_rope[l]) p.rotary_dims = 0;
  if (c.sliding_window && l < c.layer_sliding_window.size() && c.layer_sliding_window[l])
    p.window = *c.sliding_window;
  p.attention_scale = c.attention_scale.value_or(0.0);
  if (c.attention_scale && !(*c.attention_scale > 0))
    fail("model",
         source + ": the attention scale must be positive, got " + number(*c.attention_scale));
  p.softcap = c.attn_logit_softcapping;
  if (p.softcap < 0)
    fail("model",
         source + ": attn_logit_softcapping must be positive or absent, got " + number(p.softcap));
  p.sinks = c.attention_sinks;
  if (c.rope.llama_4_scaling_beta != 0)
    p.query_scaling = {c.rope.llama_4_scaling_beta, c.rope.original_max_position_embeddings};
  p.residual_multiplier = static_cast<float>(c.residual_multiplier);
  if (p.residual_multiplier != 1 && p.norms.post)
    fail("model", source +
                      ": residual_multiplier with post norms (no family has both; the "
                      "blocks scale the branches of the pre-norm arrangement only)");
  // transformers' ACT2FN names: silu (swish), and gelu_pytorch_tanh (Gemma's, also
  // gelu_new's formula).
  if (c.hidden_act == "silu" || c.hidden_act == "swish")
    p.activation = MlpActivation::kSilu;
  else if (c.hidden_act == "gelu_pytorch_tanh")
    p.activation = MlpActivation::kGeluTanh;
  else
    fail("model", source + ": hidden_act '" + c.hidden_act +
                      "' is not supported (the gated MLP takes silu or gelu_pytorch_tanh)");
  p.experts = c.layer_has_experts(layer);
  p.clamped_experts = p.experts && c.swiglu_limit > 0;
  return p;
}

std::string describe(const LayerPlan& p, int64_t head_dim) {
  std::string attention = !p.qk_norm                  ? ""
                          : p.qk_norm_over_projection ? "q/k norm over all heads, "
                                                      : "q/k norm, ";
  if (p.rotary_dims == 0)
    attention += "no RoPE, ";
  else if (p.rotary_dims < head_dim)
    attention +=
        "RoPE on " + std::to_string(p.rotary_dims) + " of " + std::to_string(head_dim) + " dims, ";
  if (p.attention_scale > 0) attention += "scale " + number(p.attention_scale) + ", ";
  if (p.softcap > 0) attention += "soft-cap " + number(p.softcap) + ", ";
  if (p.sinks) attention += "sinks, ";
  if (p.query_scaling.beta != 0)
    attention += "queries scaled by position (beta " + number(p.query_scaling.beta) + "), ";
  attention += p.window ? "window " + std::to_string(p.window) : "causal";
  const std::string norm = p.norm_weight_offset != 0 ? "(1 + w) norm" : "norm";
  const std::string pre = p.norms.pre ? norm + " · " : "";
  const std::string post = p.norms.post ? " · " + norm : "";
  // With pre norms only, the add after attention and the MLP's norm are one fused pass.
  const std::string scaled =
      p.residual_multiplier != 1 ? " · × " + number(p.residual_multiplier) : "";
  const std::string mid = p.norms.post ? " · add · " + pre : scaled + " · add + " + norm + " · ";
  const std::string mlp = p.clamped_experts ? "experts (biased router and experts, clamped SwiGLU)"
                          : p.experts       ? "experts (router, SwiGLU)"
                          : p.activation == MlpActivation::kGeluTanh ? "GELU-tanh MLP"
                                                                     : "SwiGLU MLP";
  return pre + "attention(" + attention + ")" + post + mid + mlp + post + scaled + " · add";
}

}  // namespace sft::model
