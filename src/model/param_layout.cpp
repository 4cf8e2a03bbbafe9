#include "model/param_layout.h"

#include <algorithm>
#include <optional>
#include <string>

#include "core/error.h"
#include "model/tensor_parallel.h"

namespace sft {

namespace {

// A decoder layer's tensors in HF order: the one list of their names under model.layers.N.
// (With post norms, post_attention_layernorm is the norm on attention's output and the norm
// before the MLP is pre_feedforward_layernorm, as Gemma names them: leaf_name.)
struct LayerTensor {
  ParamSlot slot;
  const char* leaf;
  ParamRole role;
};
constexpr LayerTensor kLayerTensors[] = {
    {ParamSlot::kInputNorm, "input_layernorm.weight", ParamRole::kNorm},
    {ParamSlot::kQKV, "self_attn.qkv_proj.weight", ParamRole::kAttention},
    {ParamSlot::kQ, "self_attn.q_proj.weight", ParamRole::kAttention},
    {ParamSlot::kQBias, "self_attn.q_proj.bias", ParamRole::kBias},
    {ParamSlot::kK, "self_attn.k_proj.weight", ParamRole::kAttention},
    {ParamSlot::kKBias, "self_attn.k_proj.bias", ParamRole::kBias},
    {ParamSlot::kV, "self_attn.v_proj.weight", ParamRole::kAttention},
    {ParamSlot::kVBias, "self_attn.v_proj.bias", ParamRole::kBias},
    {ParamSlot::kO, "self_attn.o_proj.weight", ParamRole::kAttention},
    {ParamSlot::kOBias, "self_attn.o_proj.bias", ParamRole::kBias},
    {ParamSlot::kQNorm, "self_attn.q_norm.weight", ParamRole::kNorm},
    {ParamSlot::kKNorm, "self_attn.k_norm.weight", ParamRole::kNorm},
    {ParamSlot::kSinks, "self_attn.sinks", ParamRole::kAttention},
    {ParamSlot::kAttnOutNorm, "post_attention_layernorm.weight", ParamRole::kNorm},
    {ParamSlot::kPostNorm, "post_attention_layernorm.weight", ParamRole::kNorm},
    {ParamSlot::kMlpOutNorm, "post_feedforward_layernorm.weight", ParamRole::kNorm},
    {ParamSlot::kGateUp, "mlp.gate_up_proj.weight", ParamRole::kMlp},
    {ParamSlot::kGate, "mlp.gate_proj.weight", ParamRole::kMlp},
    {ParamSlot::kGateBias, "mlp.gate_proj.bias", ParamRole::kBias},
    {ParamSlot::kUp, "mlp.up_proj.weight", ParamRole::kMlp},
    {ParamSlot::kUpBias, "mlp.up_proj.bias", ParamRole::kBias},
    {ParamSlot::kDown, "mlp.down_proj.weight", ParamRole::kMlp},
    {ParamSlot::kDownBias, "mlp.down_proj.bias", ParamRole::kBias},
    {ParamSlot::kExpertsGateUp, "mlp.experts.gate_up_proj", ParamRole::kMlp},
    {ParamSlot::kExpertsGateUpBias, "mlp.experts.gate_up_proj_bias", ParamRole::kBias},
    {ParamSlot::kExpertsDown, "mlp.experts.down_proj", ParamRole::kMlp},
    {ParamSlot::kExpertsDownBias, "mlp.experts.down_proj_bias", ParamRole::kBias},
    {ParamSlot::kRouter, "mlp.gate.weight", ParamRole::kMlp},
    {ParamSlot::kRouterBias, "mlp.gate.bias", ParamRole::kBias},
};

std::optional<Shape> fused_tensor_shape(const ModelConfig& c, ParamSlot slot);

// The shape of a layer tensor under this config, or {} when the config has no such tensor.
Shape layer_tensor_shape(const ModelConfig& c, ParamSlot slot, int layer) {
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  const bool experts = c.layer_has_experts(layer);
  const int64_t E = c.num_experts, Ie = c.moe_intermediate_size;
  switch (slot) {
    case ParamSlot::kRouter:
      return experts ? Shape{E, C} : Shape{};
    case ParamSlot::kExpertsGateUp:
      return experts ? Shape{E, 2 * Ie, C} : Shape{};
    case ParamSlot::kExpertsDown:
      return experts ? Shape{E, C, Ie} : Shape{};
    case ParamSlot::kRouterBias:
      return experts && c.router_bias ? Shape{E} : Shape{};
    case ParamSlot::kExpertsGateUpBias:
      return experts && c.expert_biases ? Shape{E, 2 * Ie} : Shape{};
    case ParamSlot::kExpertsDownBias:
      return experts && c.expert_biases ? Shape{E, C} : Shape{};
    case ParamSlot::kGate:
    case ParamSlot::kUp:
    case ParamSlot::kDown:
    case ParamSlot::kGateBias:
    case ParamSlot::kUpBias:
    case ParamSlot::kDownBias:
    case ParamSlot::kGateUp:
      if (experts) return {};
      break;
    default:
      break;
  }
  const int64_t Q = c.num_attention_heads * c.head_dim, KV = c.num_key_value_heads * c.head_dim;
  if (const std::optional<Shape> fused = fused_tensor_shape(c, slot)) return *fused;
  switch (slot) {
    case ParamSlot::kInputNorm:
    case ParamSlot::kPostNorm:
      return c.pre_norms ? Shape{C} : Shape{};
    case ParamSlot::kAttnOutNorm:
    case ParamSlot::kMlpOutNorm:
      return c.post_norms ? Shape{C} : Shape{};
    case ParamSlot::kSinks:
      return c.attention_sinks ? Shape{c.num_attention_heads} : Shape{};
    case ParamSlot::kQ:
      return {Q, C};
    case ParamSlot::kK:
    case ParamSlot::kV:
      return {KV, C};
    case ParamSlot::kO:
      return {C, Q};
    case ParamSlot::kQBias:
      return c.qkv_bias ? Shape{Q} : Shape{};
    case ParamSlot::kKBias:
    case ParamSlot::kVBias:
      return c.qkv_bias ? Shape{KV} : Shape{};
    case ParamSlot::kOBias:
      return c.o_bias ? Shape{C} : Shape{};
    case ParamSlot::kQNorm:
      return !c.qk_norm ? Shape{} : c.qk_norm_over_projection ? Shape{Q} : Shape{c.head_dim};
    case ParamSlot::kKNorm:
      return !c.qk_norm ? Shape{} : c.qk_norm_over_projection ? Shape{KV} : Shape{c.head_dim};
    case ParamSlot::kGate:
    case ParamSlot::kUp:
      return {I, C};
    case ParamSlot::kDown:
      return {C, I};
    case ParamSlot::kGateBias:
    case ParamSlot::kUpBias:
      return c.mlp_bias ? Shape{I} : Shape{};
    case ParamSlot::kDownBias:
      return c.mlp_bias ? Shape{C} : Shape{};
    default:
      return {};
  }
}

// Phi-3: qkv_proj and gate_up_proj in place of their parts (whose slots then have no tensor);
// nullopt for every other slot, or without fused projections.
std::optional<Shape> fused_tensor_shape(const ModelConfig& c, ParamSlot slot) {
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  const int64_t Q = c.num_attention_heads * c.head_dim, KV = c.num_key_value_heads * c.head_dim;
  switch (slot) {
    case ParamSlot::kQKV:
      return c.fused_projections ? Shape{Q + 2 * KV, C} : Shape{};
    case ParamSlot::kGateUp:
      return c.fused_projections ? Shape{2 * I, C} : Shape{};
    case ParamSlot::kQ:
    case ParamSlot::kK:
    case ParamSlot::kV:
    case ParamSlot::kGate:
    case ParamSlot::kUp:
      if (c.fused_projections) return Shape{};
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::string leaf_name(const ModelConfig& c, const LayerTensor& t) {
  if (t.slot == ParamSlot::kPostNorm && c.post_norms) return "pre_feedforward_layernorm.weight";
  // The experts under the family's module names (GraniteMoe: block_sparse_moe.router, ...).
  if (t.slot == ParamSlot::kRouter) return c.moe_module + "." + c.router_module + ".weight";
  if (t.slot == ParamSlot::kRouterBias) return c.moe_module + "." + c.router_module + ".bias";
  if (t.slot == ParamSlot::kExpertsGateUp || t.slot == ParamSlot::kExpertsDown ||
      t.slot == ParamSlot::kExpertsGateUpBias || t.slot == ParamSlot::kExpertsDownBias)
    return c.moe_module + std::string(t.leaf).substr(sizeof("mlp") - 1);
  return t.leaf;
}

// The dimension Megatron's split cuts (tensor_parallel.h), or -1 for a replicated tensor.
int tp_split_dim(ParamSlot slot) {
  switch (slot) {
    case ParamSlot::kSinks:  // one per head: each rank keeps its heads'
    case ParamSlot::kEmbed:
    case ParamSlot::kLmHead:
    case ParamSlot::kQ:
    case ParamSlot::kQBias:
    case ParamSlot::kK:
    case ParamSlot::kKBias:
    case ParamSlot::kV:
    case ParamSlot::kVBias:
    case ParamSlot::kGate:
    case ParamSlot::kGateBias:
    case ParamSlot::kUp:
    case ParamSlot::kUpBias:
      return 0;
    case ParamSlot::kO:
    case ParamSlot::kDown:
      return 1;
    default:
      return -1;  // norms, and the o / down biases (added once, after the sum)
  }
}

// Rank `rank` of `size`'s block of a whole-tensor spec: ceil(n / size) along the split
// dimension (check_tensor_parallel has made every dimension but the vocabulary divide).
void split_spec(ParamSpec& p, int rank, int size) {
  p.full_shape = p.shape;
  if (size == 1) return;
  p.tp_dim = tp_split_dim(p.slot);
  p.tp_partial_grad = p.slot == ParamSlot::kQNorm || p.slot == ParamSlot::kKNorm;
  if (p.tp_dim < 0) return;
  const size_t d = static_cast<size_t>(p.tp_dim);
  p.shape[d] = tp_block(p.shape[d], size);
  p.tp_begin = rank * p.shape[d];
}

}  // namespace

int64_t ParamSpec::tp_real() const {
  if (tp_dim < 0) return shape.empty() ? 0 : shape[0];
  const size_t d = static_cast<size_t>(tp_dim);
  return std::clamp<int64_t>(whole_shape()[d] - tp_begin, 0, shape[d]);
}

std::vector<ParamSpec> parameter_layout(const ModelConfig& c, int tp_rank, int tp_size) {
  if (tp_size > 1) model::check_tensor_parallel(c, tp_size, "parameter_layout");
  const int64_t V = c.vocab_size, C = c.hidden_size;
  std::vector<ParamSpec> out;
  out.push_back(
      {"model.embed_tokens.weight", {V, C}, ParamRole::kEmbedding, -1, ParamSlot::kEmbed});
  for (int layer = 0; layer < c.num_hidden_layers; ++layer) {
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    for (const LayerTensor& t : kLayerTensors) {
      Shape shape = layer_tensor_shape(c, t.slot, layer);
      if (!shape.empty())
        out.push_back({prefix + leaf_name(c, t), std::move(shape), t.role, layer, t.slot});
    }
  }
  out.push_back({"model.norm.weight", {C}, ParamRole::kNorm, -1, ParamSlot::kFinalNorm});
  if (!c.tie_word_embeddings)
    out.push_back({"lm_head.weight", {V, C}, ParamRole::kLmHead, -1, ParamSlot::kLmHead});
  for (ParamSpec& p : out) {
    if (p.slot == ParamSlot::kQKV) p.fused_q_rows = c.num_attention_heads * c.head_dim;
    split_spec(p, tp_rank, tp_size);
  }
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
    if (p.slot == ParamSlot::kExpertsGateUp || p.slot == ParamSlot::kExpertsDown)
      counts.experts += n;
  }
  return counts;
}

double matmul_params_per_token(const ModelConfig& config, const ParamCounts& counts) {
  const double routed =
      config.has_experts() ? double(config.num_experts_per_tok) / double(config.num_experts) : 0.0;
  return double(counts.total - counts.embeddings - counts.experts) +
         (counts.lm_head == 0 ? double(counts.embeddings) : 0.0) + double(counts.experts) * routed;
}

}  // namespace sft

namespace sft::model {

void check_tensor_parallel(const ModelConfig& c, int size, const std::string& where) {
  if (size < 1) fail("model", where + ": the tensor-parallel size must be at least 1");
  auto divides = [&](const char* field, int64_t value) {
    if (value % size != 0)
      fail("model", where + ": config.json's " + field + " (" + std::to_string(value) +
                        ") does not divide by the tensor-parallel size " + std::to_string(size) +
                        " (hint: a --tp_size that divides num_attention_heads, "
                        "num_key_value_heads and intermediate_size)");
  };
  divides("num_attention_heads", c.num_attention_heads);
  divides("num_key_value_heads", c.num_key_value_heads);
  divides("intermediate_size", c.intermediate_size);
  // A mixture of experts' router and expert stacks stay whole on every rank (tp_split_dim -1):
  // each rank runs the expert layer on the whole hidden state, so its output and input
  // gradient need no sum; --ep_size splits the experts instead (train/expert_shards.h).
  if (size > 1 && c.fused_projections)
    fail("model", where + ": model_type " + std::string(model_type_name(c.model_type)) +
                      " stores q, k, v as one self_attn.qkv_proj and gate, up as one "
                      "mlp.gate_up_proj, which sft does not split over tensor-parallel ranks "
                      "yet (hint: --tp_size 1; data parallelism splits the batch)");
  if (size > 1 && c.qk_norm_over_projection)
    fail("model",
         where + ": the q/k norm of model_type " + std::string(model_type_name(c.model_type)) +
             " (self_attn.q_norm, k_norm) spans every head, which tensor parallelism "
             "splits over the ranks (hint: --tp_size 1; data parallelism splits the batch)");
  // The vocabulary need not divide: each rank holds ceil(V / size) rows and the rows past V
  // are padding (Megatron's padded split; Qwen3's 151936 rows over 3 ranks, say).
}

}  // namespace sft::model
