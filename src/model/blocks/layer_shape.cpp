// LayerShape. See layer_shape.h.
#include "model/blocks/layer_shape.h"

namespace sft::model {

LayerShape LayerShape::of(const ModelConfig& c, int64_t tokens, DType compute, int tp_size) {
  LayerShape s = {tokens,
                  c.hidden_size,
                  c.intermediate_size / tp_size,
                  c.num_attention_heads / tp_size,
                  c.num_key_value_heads / tp_size,
                  c.head_dim,
                  c.qk_norm,
                  compute,
                  c.post_norms,
                  c.attention_sinks,
                  c.attn_logit_softcapping,
                  c.qk_norm_over_projection};
  if (!c.has_experts()) return s;
  s.E = c.num_experts;
  s.K = c.num_experts_per_tok;
  s.Ie = c.moe_intermediate_size;
  s.moe_mlp = false;
  s.dense_mlp = false;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    s.moe_mlp = s.moe_mlp || c.layer_has_experts(l);
    s.dense_mlp = s.dense_mlp || !c.layer_has_experts(l);
  }
  return s;
}

LayerShape LayerShape::for_layer(const ModelConfig& c, int64_t layer) const {
  LayerShape s = *this;
  if (!c.has_experts()) return s;
  s.moe_mlp = c.layer_has_experts(layer);
  s.dense_mlp = !s.moe_mlp;
  return s;
}

ops::View take_view(Carver& cv, DType dtype, int64_t rows, int64_t cols) {
  if (dtype == DType::kBF16)
    return ops::view_of(cv.take<uint16_t>(rows * cols), rows, cols, cv.device());
  if (dtype == DType::kF32)
    return ops::view_of(cv.take<float>(rows * cols), rows, cols, cv.device());
  fail("model", "activations are f32 or bf16, not " + std::string(dtype_name(dtype)));
}

}  // namespace sft::model
