// The parameters a config implies, under their HF names and shapes.
//
// One table for the whole family: the loader checks a checkpoint against it, `sft inspect`
// counts from it, and the model allocates its parameter arena from it.
// Dimension names: V vocab, C hidden, I intermediate, H heads, Hkv kv heads, D head dim.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/config.h"

namespace sft {

enum class ParamRole { kEmbedding, kAttention, kMlp, kNorm, kBias, kLmHead };

// Which tensor a parameter is: the model's own three, or one of a decoder layer's.
enum class ParamSlot {
  kEmbed,
  kFinalNorm,
  kLmHead,
  kInputNorm,
  kQ,
  kQBias,
  kK,
  kKBias,
  kV,
  kVBias,
  kO,
  kOBias,
  kQNorm,
  kKNorm,
  kSinks,
  kAttnOutNorm,  // on attention's output (post norms)
  kPostNorm,     // before the MLP: Llama's post_attention_layernorm, Gemma's pre_feedforward
  kMlpOutNorm,   // on the MLP's output (post norms)
  kGate,
  kGateBias,
  kUp,
  kUpBias,
  kDown,
  kDownBias,
  // Phi-3's fused projections as stored: qkv_proj (Q + 2 KV rows: q, k, v) and gate_up_proj
  // (2 I rows: gate, up). Where they are, kQ/kK/kV and kGate/kUp are their row blocks
  // (ParameterSet's parts), not tensors of the layout.
  kQKV,
  kGateUp,
  // Mixture of experts (a layer whose config.layer_has_experts): the router mlp.gate.weight
  // (E, C) and the experts stacked as transformers holds them, mlp.experts.gate_up_proj
  // (E, 2I, C: each expert's gate rows, then its up rows) and mlp.experts.down_proj (E, C, I);
  // such a layer has no kGate / kUp / kDown. GraniteMoe names the module block_sparse_moe and
  // the router router (config.moe_module, router_module). On disk the family's own form
  // (config.experts_on_disk, model/moe_checkpoint.h).
  kRouter,
  kExpertsGateUp,
  kExpertsDown,
  // gpt-oss (config.router_bias, expert_biases): the router's bias mlp.router.bias (E) and the
  // experts' biases stacked as their weights' rows, mlp.experts.gate_up_proj_bias (E, 2I: each
  // expert's gate entries, then its up entries) and mlp.experts.down_proj_bias (E, C).
  kRouterBias,
  kExpertsGateUpBias,
  kExpertsDownBias,
};

struct ParamSpec {
  std::string name;  // e.g. "model.layers.0.self_attn.q_proj.weight"
  Shape shape;
  ParamRole role;
  int layer;  // -1 for parameters outside the decoder layers
  ParamSlot slot;
  // Tensor parallelism (model/tensor_parallel.h): the dimension split over the ranks (-1 =
  // replicated), this rank's first index along it, and the whole tensor's shape (= shape
  // when nothing is split). A block is ceil(whole / T) long along tp_dim, so the last
  // ranks' blocks may reach past the whole tensor (only the vocabulary's do: Megatron's
  // padded split); those entries are padding, zero, and never read from or written to a file.
  int tp_dim = -1;
  int64_t tp_begin = 0;
  Shape full_shape = {};
  // Replicated, but applied to this rank's heads only (q_norm, k_norm): each rank's gradient
  // is a partial sum, summed over the group once per optimizer step.
  bool tp_partial_grad = false;
  // Phi-3's self_attn.qkv_proj: how many of its rows are q's (k's and v's follow, as many each).
  int64_t fused_q_rows = 0;

  // The whole tensor's shape; specs made outside parameter_layout (a LoRA adapter's) leave
  // full_shape empty and are whole.
  const Shape& whole_shape() const { return full_shape.empty() ? shape : full_shape; }
  // How many of this block's entries along tp_dim are in the whole tensor (the rest are
  // padding); shape[0] for an unsplit spec.
  int64_t tp_real() const;
};

// A dimension of n split over `size` ranks: each rank's block (the last may be part padding).
inline int64_t tp_block(int64_t n, int size) {
  return (n + size - 1) / size;
}

// HF Trainer's get_decay_parameter_names: weight decay skips norm weights and biases.
inline bool weight_decay_applies(ParamRole role) {
  return role != ParamRole::kNorm && role != ParamRole::kBias;
}

// Every trainable parameter in HF order; lm_head.weight only when embeddings are untied.
// With tp_size > 1, rank tp_rank's slices (tensor_parallel.h's split; the config must pass
// check_tensor_parallel).
std::vector<ParamSpec> parameter_layout(const ModelConfig& config, int tp_rank = 0,
                                        int tp_size = 1);

struct ParamCounts {
  int64_t total = 0;       // as transformers' model.num_parameters() (tied weights once)
  int64_t embeddings = 0;  // the input embedding matrix
  int64_t lm_head = 0;     // 0 when tied
  int64_t per_layer = 0;   // one decoder layer
  int64_t final_norm = 0;
  int64_t experts = 0;  // the stacked expert matrices (gate/up and down) of every layer
};
ParamCounts count_parameters(const std::vector<ParamSpec>& layout);
// The weights one token multiplies through (a step's model FLOPs are 6 · this · tokens +
// attention): every parameter but the input embedding, which counts when it is the tied LM
// head; of a mixture's stacked experts only the k of E each token is routed to.
double matmul_params_per_token(const ModelConfig& config, const ParamCounts& counts);

}  // namespace sft
