// The mixture-of-experts families' config keys (see config_reader.h): one row per family with
// its config class's defaults, which keys it has and how it names its experts, so a new family
// is a row here and a row in config.cpp's type table.
#include <algorithm>
#include <array>

#include "model/config_reader.h"
#include "model/mxfp4.h"

namespace sft::config_detail {

namespace {

struct MoeFamilyTraits {
  MoeFamily family;
  int64_t experts, top_k;  // num_experts / num_local_experts, num_experts_per_tok defaults
  // Qwen3-MoE: the expert's own moe_intermediate_size, decoder_sparse_step and
  // mlp_only_layers; the others: every layer has experts of intermediate_size.
  bool sparse_layers;
  // norm_topk_prob is a key (default false); otherwise the weights are always renormalised
  // (Mixtral's softmax → top-k → renormalise, GraniteMoe's softmax over the top-k logits).
  bool norm_topk_key;
  double aux_coef;           // router_aux_loss_coef's default
  bool router_jitter_noise;  // Mixtral: a key, which must be 0 (the noise is not built)
  // Where the family writes the expert count (transformers' own key for it).
  const char* experts_key;
  const char* moe_module;     // in memory: model.layers.N.<moe_module>.experts...
  const char* router_module;  // <moe_module>.<router_module>.weight
  ExpertsOnDisk on_disk;
};

constexpr std::array<MoeFamilyTraits, 5> kFamilies = {{
    {MoeFamily::kQwen3Moe, 128, 8, true, true, 0.001, false, "num_experts", "mlp", "gate",
     ExpertsOnDisk::kPerExpertProj},
    {MoeFamily::kOlmoe, 64, 8, false, true, 0.01, false, "num_experts", "mlp", "gate",
     ExpertsOnDisk::kPerExpertProj},
    {MoeFamily::kMixtral, 8, 2, false, false, 0.001, true, "num_local_experts", "mlp", "gate",
     ExpertsOnDisk::kPerExpertW},
    {MoeFamily::kGraniteMoe, 8, 2, false, false, 0.001, false, "num_local_experts",
     "block_sparse_moe", "router", ExpertsOnDisk::kStackedLinear},
    // gpt-oss: softmax over the top-k biased router logits (= softmax, top-k, renormalise).
    {MoeFamily::kGptOss, 128, 4, false, false, 0.001, false, "num_local_experts", "mlp", "router",
     ExpertsOnDisk::kTransposedInterleaved},
}};

// gpt-oss's quantization_config: "mxfp4", the released checkpoints' (their experts as MXFP4
// pairs, dequantized at load as transformers does: model/mxfp4.h), is the one method read;
// modules_to_not_convert needs no reading, since the checkpoint itself says which stacks are
// stored in MXFP4 (transformers' dequantizing load goes by the stored names too).
void read_gpt_oss_quantization(const Reader& r, ModelConfig& c) {
  const Json* q = r.get("quantization_config");
  if (!q || q->is_null()) return;
  const Json* method = q->is_object() ? r.get(*q, "quant_method") : nullptr;
  const std::string name = method && method->is_string() ? method->get<std::string>() : "";
  if (name != "mxfp4")
    r.bad("quantization_config",
          method ? "quant_method " + method->dump() + " is not one sft reads for gpt-oss"
                 : "expected an object with a quant_method",
          "sft reads gpt-oss folders in bf16/fp32 and the released MXFP4 ones (quant_method "
          "\"mxfp4\"); dequantize others once with transformers and save_pretrained the result");
  // Rows of 32-value blocks: the experts' input widths must be whole blocks.
  for (const auto& [key, width] : {std::pair{"hidden_size", c.hidden_size},
                                   std::pair{"intermediate_size", c.intermediate_size}})
    if (width % model::kMxfp4BlockValues != 0)
      r.bad(key,
            "is " + std::to_string(width) + ", not a multiple of MXFP4's blocks of " +
                std::to_string(model::kMxfp4BlockValues) + " values",
            "this config.json does not belong to an MXFP4 checkpoint");
  c.experts_mxfp4 = true;
}

// gpt-oss beyond the shared keys: the router's and the experts' biases, the clamped SwiGLU
// (swiglu_limit, swiglu_alpha: GptOssConfig's 7.0 and 1.702), the attention sinks, the MXFP4
// quantization_config.
void read_gpt_oss(const Reader& r, ModelConfig& c) {
  read_gpt_oss_quantization(r, c);
  c.router_bias = c.expert_biases = true;
  c.attention_sinks = true;
  c.swiglu_limit = r.get("swiglu_limit") ? r.number(*r.get("swiglu_limit"), "swiglu_limit") : 7.0;
  if (!(c.swiglu_limit > 0))
    r.bad("swiglu_limit", "expected a positive number, got " + std::to_string(c.swiglu_limit));
  c.swiglu_alpha = r.get("swiglu_alpha") ? r.number(*r.get("swiglu_alpha"), "swiglu_alpha") : 1.702;
}

const MoeFamilyTraits& traits_of(MoeFamily family) {
  for (const MoeFamilyTraits& t : kFamilies)
    if (t.family == family) return t;
  fail(kComponent,
       "mixture-of-experts family " + std::to_string(static_cast<int>(family)) + " has no traits");
}

}  // namespace

void read_moe(const Reader& r, ModelConfig& c, MoeFamily family) {
  const MoeFamilyTraits& t = traits_of(family);
  // transformers maps num_experts and num_local_experts onto each other (attribute_map).
  const char* experts_key = r.get("num_experts") ? "num_experts" : "num_local_experts";
  c.num_experts = r.positive(experts_key, t.experts);
  c.num_experts_per_tok = r.positive("num_experts_per_tok", t.top_k);
  if (c.num_experts_per_tok > c.num_experts)
    r.bad("num_experts_per_tok", "is " + std::to_string(c.num_experts_per_tok) +
                                     ", more than the " + std::to_string(c.num_experts) +
                                     " experts");
  c.moe_intermediate_size =
      t.sparse_layers ? r.positive("moe_intermediate_size", 768) : c.intermediate_size;
  c.norm_topk_prob = t.norm_topk_key ? r.boolean("norm_topk_prob", false) : true;
  c.decoder_sparse_step = t.sparse_layers ? r.positive("decoder_sparse_step", 1) : 1;
  if (const Json* v = t.sparse_layers ? r.get("mlp_only_layers") : nullptr) {
    if (!v->is_array()) r.bad("mlp_only_layers", "expected a list of layer indices");
    for (const Json& l : *v) {
      const int64_t layer = r.integer(l, "mlp_only_layers");
      if (layer < 0 || layer >= c.num_hidden_layers)
        r.bad("mlp_only_layers", "layer " + std::to_string(layer) + " is not one of the " +
                                     std::to_string(c.num_hidden_layers) + " layers");
      c.mlp_only_layers.push_back(layer);
    }
  }
  c.router_aux_loss_coef = r.get("router_aux_loss_coef")
                               ? r.number(*r.get("router_aux_loss_coef"), "router_aux_loss_coef")
                               : t.aux_coef;
  if (t.router_jitter_noise) {
    const Json* v = r.get("router_jitter_noise");
    if (v && r.number(*v, "router_jitter_noise") != 0)
      r.bad("router_jitter_noise", "the router's input noise in training is not supported",
            "set router_jitter_noise to 0.0 (the released Mixtral checkpoints have 0)");
  }
  if (family == MoeFamily::kOlmoe) {
    c.qk_norm = c.qk_norm_over_projection = true;  // pre norms, unlike OLMo 2
    if (r.get("clip_qkv"))
      r.bad("clip_qkv", "clipping q, k and v is not supported",
            "set clip_qkv to null (the released OLMoE checkpoints have none)");
  }
  if (family == MoeFamily::kGptOss) read_gpt_oss(r, c);
  c.output_router_logits = r.boolean("output_router_logits", false);
  c.moe_module = t.moe_module;
  c.router_module = t.router_module;
  c.experts_on_disk = t.on_disk;
  c.layer_moe.assign(static_cast<size_t>(c.num_hidden_layers), false);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const bool dense =
        std::find(c.mlp_only_layers.begin(), c.mlp_only_layers.end(), l) != c.mlp_only_layers.end();
    c.layer_moe[static_cast<size_t>(l)] = !dense && (l + 1) % c.decoder_sparse_step == 0;
  }
}

void write_moe(const ModelConfig& c, MoeFamily family, Json& j) {
  const MoeFamilyTraits& t = traits_of(family);
  j[t.experts_key] = c.num_experts;
  j["num_experts_per_tok"] = c.num_experts_per_tok;
  if (t.norm_topk_key) j["norm_topk_prob"] = c.norm_topk_prob;
  if (t.router_jitter_noise) j["router_jitter_noise"] = 0.0;
  j["router_aux_loss_coef"] = c.router_aux_loss_coef;
  j["output_router_logits"] = c.output_router_logits;
  if (family == MoeFamily::kGptOss) {
    j["swiglu_limit"] = c.swiglu_limit;
    j["swiglu_alpha"] = c.swiglu_alpha;
  }
  if (t.sparse_layers) {
    j["moe_intermediate_size"] = c.moe_intermediate_size;
    j["decoder_sparse_step"] = c.decoder_sparse_step;
    j["mlp_only_layers"] = c.mlp_only_layers;
  }
}

}  // namespace sft::config_detail
