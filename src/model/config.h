// ModelConfig: the typed content of an HF config.json for the decoder family sft trains
// (model_type llama, mistral, qwen2, qwen3, smollm3, olmo2, granite, phi3, ministral, gemma2,
// gemma3_text, qwen3_moe, olmoe, mixtral, granitemoe, gpt_oss, and the text part of a gemma3 or
// mistral3 folder: its config.json nests the text model under text_config, config_multimodal.cpp).
//
// Architecture differences are data here (bias flags, q/k norm, sliding-window layers),
// not separate model classes. Defaults for absent keys follow each transformers config
// class. Both config.json generations are read: `rope_theta` + `rope_scaling` + `torch_dtype`
// (transformers 4.x) and `rope_parameters` + `dtype` (5.x); model_config_to_json writes the
// 5.x form. Per-type knowledge (defaults, which keys a type has) is one table in config.cpp
// that the reader and the writer share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "io/json.h"

namespace sft {

enum class ModelType {
  kLlama,
  kMistral,
  kQwen2,
  kQwen3,
  kSmolLM3,
  kOlmo2,
  kGranite,
  kPhi3,
  kMinistral,
  kMinistral3,
  kGemma2,
  kGemma3Text,
  kQwen3Moe,
  kOlmoe,
  kMixtral,
  kGraniteMoe,
  kGptOss,
};
std::string_view model_type_name(ModelType type);

// How a mixture of experts' checkpoints store the experts (model/moe_checkpoint.h):
// kPerExpertProj: mlp.experts.<e>.{gate,up,down}_proj.weight (Qwen3-MoE, OLMoE);
// kPerExpertW: block_sparse_moe.experts.<e>.{w1,w3,w2}.weight = gate, up, down, and the router
//   block_sparse_moe.gate.weight (Mixtral);
// kStackedLinear: every expert in one block_sparse_moe.input_linear.weight (E, 2I, C: gate rows,
//   then up rows) and output_linear.weight (E, C, I), the router block_sparse_moe.router.layer
//   (GraniteMoe);
// kTransposedInterleaved: mlp.experts.gate_up_proj (E, C, 2I: gate and up in alternating
//   columns, 2i and 2i + 1), down_proj (E, I, C) and their biases gate_up_proj_bias (E, 2I,
//   interleaved the same way) and down_proj_bias (E, C), the router mlp.router (gpt-oss).
enum class ExpertsOnDisk { kPerExpertProj, kPerExpertW, kStackedLinear, kTransposedInterleaved };

enum class RopeType { kDefault, kLinear, kDynamic, kLlama3, kYarn, kLongrope };
std::string_view rope_type_name(RopeType type);

// Rotary-embedding parameters. Only the fields of the chosen type are meaningful.
struct RopeConfig {
  RopeType type = RopeType::kDefault;
  double theta = 10000.0;
  double factor = 1.0;                           // linear, dynamic, llama3, yarn
  double low_freq_factor = 1.0;                  // llama3
  double high_freq_factor = 4.0;                 // llama3
  int64_t original_max_position_embeddings = 0;  // llama3, yarn, longrope (0 = absent)
  std::optional<double> attention_factor;        // yarn, longrope
  // longrope (Phi-3): one divisor per inv_freq entry (R/2), short up to
  // original_max_position_embeddings positions, long past them (rope.h says when).
  std::vector<double> short_factor, long_factor;
  double beta_fast = 32.0;               // yarn
  double beta_slow = 1.0;                // yarn
  std::optional<double> mscale;          // yarn
  std::optional<double> mscale_all_dim;  // yarn
  bool truncate = true;                  // yarn
  double partial_rotary_factor = 1.0;
  // Ministral 3 (Llama 4's attention scaling): after RoPE each query is multiplied by
  // 1 + β·log(1 + ⌊position / original_max_position_embeddings⌋); 0 = none.
  double llama_4_scaling_beta = 0;
};

struct ModelConfig {
  ModelType model_type = ModelType::kLlama;
  std::vector<std::string> architectures;

  int64_t vocab_size = 0;           // V
  int64_t hidden_size = 0;          // C
  int64_t intermediate_size = 0;    // I
  int64_t num_hidden_layers = 0;    // L
  int64_t num_attention_heads = 0;  // H
  int64_t num_key_value_heads = 0;  // Hkv
  int64_t head_dim = 0;             // D (may differ from C / H, e.g. Qwen3)
  std::string hidden_act = "silu";
  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  // Gemma 3: the sliding layers' own rope parameters (rope_parameters.sliding_attention, or
  // rope_local_base_freq); a layer l with layer_rope_set[l] == 1 uses them. Empty: one set.
  std::optional<RopeConfig> sliding_rope;
  std::vector<uint8_t> layer_rope_set;
  int64_t max_position_embeddings = 0;
  bool tie_word_embeddings = false;

  bool qkv_bias =
      false;  // q/k/v projections have a bias (Qwen2 always; Llama/Qwen3 via attention_bias)
  bool o_bias = false;                   // o_proj has a bias (Llama/Qwen3 attention_bias)
  bool mlp_bias = false;                 // gate/up/down biases (Llama mlp_bias)
  bool qk_norm = false;                  // RMSNorm on q and k before RoPE: per head (Qwen3), or
  bool qk_norm_over_projection = false;  // over the whole q / k projection (OLMo 2)
  // Phi-3: q, k, v as one self_attn.qkv_proj (Q + 2 KV rows) and gate, up as one
  // mlp.gate_up_proj (2 I rows, gate first), as stored on disk (param_layout.h).
  bool fused_projections = false;

  std::optional<int64_t> sliding_window;   // window size when any layer uses it
  std::vector<bool> layer_sliding_window;  // per layer: true = sliding, false = full attention

  // The layer's arrangement beyond Llama's (model/blocks/layer_plan.h reads these once; today's
  // families keep the defaults, the families of docs/architecture.md's table set them).
  bool pre_norms = true;          // a norm before attention and before the MLP (all but OLMo 2)
  bool post_norms = false;        // a norm on attention's and the MLP's output (OLMo 2, Gemma)
  double norm_weight_offset = 0;  // 1: the norms scale by (1 + w) (Gemma)
  std::vector<bool> layer_rope;   // per layer: false = no RoPE (SmolLM3); empty = RoPE everywhere
  std::optional<double> attention_scale;  // the score scale when not 1/sqrt(head_dim)
  double attn_logit_softcapping = 0;      // 0 = none
  bool attention_sinks = false;           // a learnable sink logit per head (gpt-oss)
  // The family's RMSNorm returns x̂ · w cast to its input's dtype (Gemma, OLMo 2), where Llama's
  // and Qwen's cast x̂ first: under bf16 autocast a norm of a bf16 value (the q/k norms, which
  // read a projection's output) then rounds its output.
  bool norm_output_in_input_dtype = false;
  // Granite's scalings: the embeddings times embedding_multiplier, each branch's output times
  // residual_multiplier before its add, the logits divided by logits_scaling.
  double embedding_multiplier = 1;
  double residual_multiplier = 1;
  double logits_scaling = 1;
  // Gemma: the embeddings times sqrt(hidden_size) rounded to the embedding weight's dtype
  // (Gemma3TextScaledWordEmbedding), and the logits soft-capped, cap · tanh(z / cap) (0 = none).
  bool embedding_scale_sqrt_hidden = false;
  double final_logit_softcapping = 0;

  // Mixture of experts (qwen3_moe, olmoe, mixtral, granitemoe, gpt_oss): num_experts experts of
  // moe_intermediate_size each replace the dense MLP in the layers layer_moe marks (transformers:
  // not in mlp_only_layers and (layer + 1) % decoder_sparse_step == 0); the router takes
  // num_experts_per_tok of them per token, renormalising their weights with norm_topk_prob (always
  // for Mixtral's softmax, top-k, renormalise and GraniteMoe's softmax over the top-k logits: the
  // same weights). router_aux_loss_coef scales the load-balancing loss, which TRL adds when it is
  // non-zero.
  int64_t num_experts = 0;            // E; 0 = a dense MLP in every layer
  int64_t num_experts_per_tok = 0;    // k
  int64_t moe_intermediate_size = 0;  // an expert's I
  bool norm_topk_prob = false;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;
  std::vector<bool> layer_moe;  // per layer; empty = none
  double router_aux_loss_coef = 0;
  bool output_router_logits = false;
  // The experts' module names in memory, as transformers 5 holds them (sft's parameters carry
  // these): model.layers.N.<moe_module>.<router_module>.weight (E, C) and
  // <moe_module>.experts.gate_up_proj / .down_proj; and how the checkpoints store them.
  std::string moe_module = "mlp";
  std::string router_module = "gate";
  ExpertsOnDisk experts_on_disk = ExpertsOnDisk::kPerExpertProj;
  // gpt-oss's quantization_config {"quant_method": "mxfp4"}: the checkpoint stores the expert
  // stacks as MXFP4 _blocks/_scales pairs (model/mxfp4.h), dequantized at load. The model is
  // dense from then on, and the config sft writes back has no quantization_config.
  bool experts_mxfp4 = false;
  // gpt-oss: the router has a bias (<router_module>.bias), each expert's projections too
  // (experts.gate_up_proj_bias (E, 2I), experts.down_proj_bias (E, C)), and the experts'
  // activation is the clamped SwiGLU (ops::swiglu_clamped_*): swiglu_limit > 0 (0 = the plain
  // SwiGLU of the other families), swiglu_alpha the sigmoid's gain.
  bool router_bias = false;
  bool expert_biases = false;
  double swiglu_limit = 0;
  double swiglu_alpha = 1.702;
  bool has_experts() const { return num_experts > 0; }
  bool layer_has_experts(int64_t layer) const {
    return static_cast<size_t>(layer) < layer_moe.size() && layer_moe[static_cast<size_t>(layer)];
  }

  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;  // config.json allows an int or a list
  std::optional<int64_t> pad_token_id;
  std::optional<DType> dtype;  // torch_dtype / dtype of the saved weights
};

// Parses a config.json object. `source` names the file in errors.
ModelConfig parse_model_config(const Json& config, const std::string& source);
ModelConfig load_model_config(const std::string& config_json_path);

// A config.json for a model that has no source file (e.g. built by Transformer::random), in
// transformers 5's layout (rope_parameters, layer_types); parse_model_config reads it back to
// the same config. No dtype key: an export adds the dtype it saves (train/export_json.h).
Json model_config_to_json(const ModelConfig& config);

}  // namespace sft
