#include "model/param_layout.h"

namespace sft {

std::vector<ParamSpec> parameter_layout(const ModelConfig& c) {
  const int64_t V = c.vocab_size, C = c.hidden_size, I = c.intermediate_size;
  const int64_t H = c.num_attention_heads, Hkv = c.num_key_value_heads, D = c.head_dim;
  std::vector<ParamSpec> out;
  out.push_back({"model.embed_tokens.weight", {V, C}, ParamRole::kEmbedding, -1});
  for (int layer = 0; layer < c.num_hidden_layers; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    auto add = [&](const std::string& name, Shape shape, ParamRole role) {
      out.push_back({p + name, std::move(shape), role, layer});
    };
    add("input_layernorm.weight", {C}, ParamRole::kNorm);
    add("self_attn.q_proj.weight", {H * D, C}, ParamRole::kAttention);
    if (c.qkv_bias) add("self_attn.q_proj.bias", {H * D}, ParamRole::kAttention);
    add("self_attn.k_proj.weight", {Hkv * D, C}, ParamRole::kAttention);
    if (c.qkv_bias) add("self_attn.k_proj.bias", {Hkv * D}, ParamRole::kAttention);
    add("self_attn.v_proj.weight", {Hkv * D, C}, ParamRole::kAttention);
    if (c.qkv_bias) add("self_attn.v_proj.bias", {Hkv * D}, ParamRole::kAttention);
    add("self_attn.o_proj.weight", {C, H * D}, ParamRole::kAttention);
    if (c.o_bias) add("self_attn.o_proj.bias", {C}, ParamRole::kAttention);
    if (c.qk_norm) {
      add("self_attn.q_norm.weight", {D}, ParamRole::kNorm);
      add("self_attn.k_norm.weight", {D}, ParamRole::kNorm);
    }
    add("post_attention_layernorm.weight", {C}, ParamRole::kNorm);
    add("mlp.gate_proj.weight", {I, C}, ParamRole::kMlp);
    if (c.mlp_bias) add("mlp.gate_proj.bias", {I}, ParamRole::kMlp);
    add("mlp.up_proj.weight", {I, C}, ParamRole::kMlp);
    if (c.mlp_bias) add("mlp.up_proj.bias", {I}, ParamRole::kMlp);
    add("mlp.down_proj.weight", {C, I}, ParamRole::kMlp);
    if (c.mlp_bias) add("mlp.down_proj.bias", {C}, ParamRole::kMlp);
  }
  out.push_back({"model.norm.weight", {C}, ParamRole::kNorm, -1});
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", {V, C}, ParamRole::kLmHead, -1});
  return out;
}

ParamCounts count_parameters(const std::vector<ParamSpec>& layout) {
  ParamCounts counts;
  for (const ParamSpec& p : layout) {
    const int64_t n = shape_numel(p.shape);
    counts.total += n;
    if (p.role == ParamRole::kEmbedding) counts.embeddings += n;
    if (p.role == ParamRole::kLmHead) counts.lm_head += n;
    if (p.layer == 0) counts.per_layer += n;
    if (p.layer < 0 && p.role == ParamRole::kNorm) counts.final_norm += n;
  }
  return counts;
}

}  // namespace sft
