// ModelConfig from and to config.json (see config.h).
#include "model/config.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "core/edit_distance.h"
#include "model/config_reader.h"

namespace sft {

namespace {

using config_detail::kComponent;
using config_detail::MoeFamily;
using config_detail::Reader;

// Defaults of a transformers config class for keys a config.json may omit.
struct TypeDefaults {
  int64_t vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads;
  int64_t num_key_value_heads;  // 0 = same as num_attention_heads
  int64_t head_dim;             // 0 = hidden_size / num_attention_heads
  int64_t max_position_embeddings;
  int64_t sliding_window;  // 0 = none by default
  bool tie_word_embeddings = false;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  bool attention_bias = false;  // attention_bias's default (gpt-oss: true)
};

// The architecture keys a config class has (false: the class fixes that part).
struct TypeKeys {
  bool attention_bias = false;  // attention_bias: q/k/v and o_proj biases
  bool mlp_bias = false;        // mlp_bias: gate/up/down biases
  bool fixed_qkv_bias = false;  // no key: q/k/v always have a bias, o_proj none (Qwen2Attention)
  bool qk_norm = false;         // no key: per-head RMSNorm on q and k, always
  // use_sliding_window + max_window_layers: the window only when enabled, for the layers from
  // max_window_layers on (false: sliding_window alone sets it for every layer).
  bool window_opt_in = false;
  // no_rope_layers (1 = RoPE, 0 = none) or, absent, a NoPE layer every no_rope_layer_interval
  // layers (SmolLM3); without a layer_types key the sliding window goes to the NoPE layers.
  bool no_rope_layers = false;
  // OLMo 2: RMSNorm on the whole q and k projections (no key), norms after attention and the
  // MLP instead of before them.
  bool projection_qk_norm_post_norms = false;
  // Granite: embedding_multiplier, residual_multiplier, logits_scaling and attention_multiplier
  // (the attention scale itself, 1.0 by default: not 1/sqrt(head_dim)).
  bool multipliers = false;
  // Phi-3: fused qkv_proj and gate_up_proj (no bias keys), a top-level
  // original_max_position_embeddings (default 4096) that longrope takes over its own
  // (transformers' standardize_rope_params), and a top-level partial_rotary_factor.
  bool phi3 = false;
  // Gemma 2 (2) and Gemma 3 (3): hidden_activation, pre and post (1 + w) norms,
  // query_pre_attn_scalar, the two soft-caps, sqrt(hidden_size) embeddings, a default window and
  // layer_types pattern; Gemma 3 adds q/k norms and the sliding layers' own rope parameters.
  int gemma = 0;
  // Ministral 3: without rope_parameters, Ministral3Config's YaRN (factor 16 over 16384
  // positions, theta 1e6) with llama_4_scaling_beta 0.1, which only this type applies.
  bool ministral3 = false;
  // A mixture of experts (config_moe_families.cpp holds each family's keys and tensor names);
  // Qwen3-MoE's use_sliding_window slides every layer (no max_window_layers).
  MoeFamily moe = MoeFamily::kNone;
};

// One row per model type. The reader and the writer (model_config_to_json) both follow this
// table, so a new type is one row.
struct TypeTraits {
  ModelType type;
  std::string_view name;
  TypeDefaults defaults;
  TypeKeys keys;
};

constexpr std::array<TypeTraits, 17> kTypes = {{
    {ModelType::kLlama,
     "llama",
     {32000, 4096, 11008, 32, 32, 0, 0, 2048, 0},
     {.attention_bias = true, .mlp_bias = true, .window_opt_in = true}},
    {ModelType::kMistral, "mistral", {32000, 4096, 14336, 32, 32, 8, 0, 4096 * 32, 4096}, {}},
    {ModelType::kQwen2,
     "qwen2",
     {151936, 4096, 22016, 32, 32, 32, 0, 32768, 4096},
     {.fixed_qkv_bias = true, .window_opt_in = true}},
    {ModelType::kQwen3,
     "qwen3",
     {151936, 4096, 22016, 32, 32, 32, 128, 32768, 4096},
     {.attention_bias = true, .qk_norm = true, .window_opt_in = true}},
    {ModelType::kSmolLM3,
     "smollm3",
     {128256, 2048, 11008, 36, 16, 4, 0, 32768, 0, true, 2000000.0},
     {.attention_bias = true, .mlp_bias = true, .window_opt_in = true, .no_rope_layers = true}},
    {ModelType::kOlmo2,
     "olmo2",
     {50304, 4096, 11008, 32, 32, 0, 0, 2048, 0, false, 10000.0, 1e-5},
     {.attention_bias = true, .projection_qk_norm_post_norms = true}},
    {ModelType::kGranite,
     "granite",
     {32000, 4096, 11008, 32, 32, 0, 0, 2048, 0},
     {.attention_bias = true, .mlp_bias = true, .multipliers = true}},
    {ModelType::kPhi3,
     "phi3",
     {32064, 3072, 8192, 32, 32, 0, 0, 4096, 0, false, 10000.0, 1e-5},
     {.phi3 = true}},
    // MinistralConfig: Mistral's layout and defaults; layer_types (default: every layer sliding
    // when sliding_window is set) picks the sliding layers.
    {ModelType::kMinistral, "ministral", {32000, 4096, 14336, 32, 32, 8, 0, 4096 * 32, 4096}, {}},
    // Ministral3Config: Mistral's layers, YaRN by default, Llama 4's query scaling.
    {ModelType::kMinistral3,
     "ministral3",
     {131072, 4096, 14336, 34, 32, 8, 128, 262144, 0, false, 1000000.0, 1e-5},
     {.ministral3 = true}},
    {ModelType::kGemma2,
     "gemma2",
     {256000, 2304, 9216, 26, 8, 4, 256, 8192, 4096, true, 10000.0, 1e-6},
     {.attention_bias = true, .gemma = 2}},
    {ModelType::kGemma3Text,
     "gemma3_text",
     {262208, 2304, 9216, 26, 8, 4, 256, 131072, 4096, true, 1000000.0, 1e-6},
     {.attention_bias = true, .gemma = 3}},
    {ModelType::kQwen3Moe,
     "qwen3_moe",
     {151936, 2048, 6144, 24, 32, 4, 0, 32768, 4096},
     {.attention_bias = true, .qk_norm = true, .window_opt_in = true, .moe = MoeFamily::kQwen3Moe}},
    {ModelType::kOlmoe,
     "olmoe",
     {50304, 2048, 2048, 16, 16, 0, 0, 4096, 0, false, 10000.0, 1e-5},
     {.attention_bias = true, .moe = MoeFamily::kOlmoe}},
    // MixtralConfig: Mistral's attention (no biases, sliding_window on every layer when set).
    {ModelType::kMixtral,
     "mixtral",
     {32000, 4096, 14336, 32, 32, 8, 0, 4096 * 32, 0, false, 1000000.0, 1e-5},
     {.moe = MoeFamily::kMixtral}},
    // GraniteMoeConfig: Granite's multipliers and attention_bias around the experts.
    {ModelType::kGraniteMoe,
     "granitemoe",
     {32000, 4096, 11008, 32, 32, 0, 0, 2048, 0},
     {.attention_bias = true, .multipliers = true, .moe = MoeFamily::kGraniteMoe}},
    // GptOssConfig: attention biases by default, sinks, sliding (128) and full layers
    // alternating, YaRN by default; the experts' keys in config_moe_families.cpp.
    {ModelType::kGptOss,
     "gpt_oss",
     {201088, 2880, 2880, 36, 64, 8, 64, 131072, 128, false, 150000.0, 1e-5, true},
     {.attention_bias = true, .moe = MoeFamily::kGptOss}},
}};

const TypeTraits& traits_of(ModelType type) {
  for (const TypeTraits& t : kTypes) {
    if (t.type == type) return t;
  }
  fail(kComponent, "model type " + std::to_string(static_cast<int>(type)) + " has no traits");
}

struct RopeTypeName {
  RopeType type;
  std::string_view name;
};
constexpr RopeTypeName kRopeTypes[] = {
    {RopeType::kDefault, "default"}, {RopeType::kLinear, "linear"},
    {RopeType::kDynamic, "dynamic"}, {RopeType::kLlama3, "llama3"},
    {RopeType::kYarn, "yarn"},       {RopeType::kLongrope, "longrope"}};

RopeType parse_rope_type(const Reader& r, const std::string& key, const std::string& name) {
  for (const RopeTypeName& t : kRopeTypes) {
    if (t.name == name) return t.type;
  }
  r.bad(key, "rope type '" + name + "' is not supported",
        "supported rope types: default, linear, dynamic, llama3, yarn, longrope");
}

// longrope's short_factor / long_factor: a list of numbers (its length is checked against the
// rotary dims once they are known).
std::vector<double> parse_factor_list(const Reader& r, const Json& params, const std::string& key) {
  const std::string leaf = key.substr(key.rfind('.') + 1);
  const Json* v = r.get(params, leaf);
  if (!v || !v->is_array() || v->empty())
    r.bad(key, "longrope needs a list of numbers, one per rotary frequency");
  std::vector<double> out;
  for (const Json& f : *v) out.push_back(r.number(f, key));
  return out;
}

// The keys of one rope parameter set (`params`, named `key` in errors) over `rope`.
void read_rope_params(const Reader& r, RopeConfig& rope, const Json& params, const std::string& key,
                      bool phi3) {
  rope.theta = r.number_or(params, "rope_theta", rope.theta);
  const Json* type = r.get(params, "rope_type");
  if (!type) type = r.get(params, "type");
  if (type) {
    if (!type->is_string())
      r.bad(key + ".rope_type", "expected a string, got " + json_type_name(*type));
    std::string name = type->get<std::string>();
    if (phi3 && (name == "su" || name == "yarn")) name = "longrope";  // Phi3Config's aliases
    rope.type = parse_rope_type(r, key + ".rope_type", name);
  }
  rope.factor = r.number_or(params, "factor", 1.0);
  rope.low_freq_factor = r.number_or(params, "low_freq_factor", rope.low_freq_factor);
  rope.high_freq_factor = r.number_or(params, "high_freq_factor", rope.high_freq_factor);
  if (const Json* v = r.get(params, "original_max_position_embeddings")) {
    rope.original_max_position_embeddings =
        r.integer(*v, key + ".original_max_position_embeddings");
  }
  if (const Json* v = r.get(params, "attention_factor"))
    rope.attention_factor = r.number(*v, key + ".attention_factor");
  rope.beta_fast = r.number_or(params, "beta_fast", rope.beta_fast);
  rope.beta_slow = r.number_or(params, "beta_slow", rope.beta_slow);
  if (const Json* v = r.get(params, "mscale")) rope.mscale = r.number(*v, key + ".mscale");
  if (const Json* v = r.get(params, "mscale_all_dim"))
    rope.mscale_all_dim = r.number(*v, key + ".mscale_all_dim");
  if (const Json* v = r.get(params, "truncate"))
    rope.truncate = v->is_boolean() ? v->get<bool>() : true;
  rope.partial_rotary_factor =
      r.number_or(params, "partial_rotary_factor", rope.partial_rotary_factor);
  rope.llama_4_scaling_beta =
      r.number_or(params, "llama_4_scaling_beta", rope.llama_4_scaling_beta);
  if (phi3 && rope.type == RopeType::kLongrope) {
    rope.short_factor = parse_factor_list(r, params, key + ".short_factor");
    rope.long_factor = parse_factor_list(r, params, key + ".long_factor");
  }

  const bool scaled = rope.type != RopeType::kDefault;
  if (scaled && rope.factor < 1.0) {
    r.bad(key + ".factor", "rope scaling factor must be >= 1, got " + std::to_string(rope.factor));
  }
  if (rope.type == RopeType::kLlama3 && rope.original_max_position_embeddings <= 0) {
    r.bad(key + ".original_max_position_embeddings", "llama3 rope scaling needs a positive value");
  }
}

// Ministral3Config.__post_init__'s rope_parameters when config.json has none.
RopeConfig ministral3_default_rope() {
  RopeConfig rope;
  rope.type = RopeType::kYarn;
  rope.theta = 1000000.0;
  rope.factor = 16.0;
  rope.original_max_position_embeddings = 16384;
  rope.beta_fast = 32.0;
  rope.beta_slow = 1.0;
  rope.mscale = 1.0;
  rope.mscale_all_dim = 1.0;
  rope.llama_4_scaling_beta = 0.1;
  return rope;
}

// GptOssConfig.__post_init__'s rope_parameters when config.json has none.
RopeConfig gpt_oss_default_rope(double theta) {
  RopeConfig rope;
  rope.type = RopeType::kYarn;
  rope.theta = theta;
  rope.factor = 32.0;
  rope.original_max_position_embeddings = 4096;
  rope.beta_fast = 32.0;
  rope.beta_slow = 1.0;
  rope.truncate = false;
  return rope;
}

// Reads rope settings from either `rope_parameters` (5.x) or `rope_theta` + `rope_scaling` (4.x).
RopeConfig parse_rope(const Reader& r, double default_theta, bool phi3) {
  RopeConfig rope;
  rope.theta = default_theta;
  const Json* params = r.get("rope_parameters");
  std::string key = "rope_parameters";
  if (params && params->is_object() && params->contains("full_attention")) {
    // Per-layer-type rope parameters: this family uses one set for every layer.
    params = &(*params)["full_attention"];
    key += ".full_attention";
  }
  if (!params) {
    params = r.get("rope_scaling");
    key = "rope_scaling";
  }
  if (params && !params->is_object())
    r.bad(key, "expected an object, got " + json_type_name(*params));
  if (const Json* theta = r.get("rope_theta")) rope.theta = r.number(*theta, "rope_theta");
  if (const Json* v = r.get("partial_rotary_factor"))
    rope.partial_rotary_factor = r.number(*v, "partial_rotary_factor");
  if (params) read_rope_params(r, rope, *params, key, phi3);
  return rope;
}

std::optional<DType> parse_torch_dtype(const Reader& r) {
  std::string key = r.get("dtype") ? "dtype" : "torch_dtype";
  std::string name = r.string(key, "");
  if (name.empty() || name == "auto") return std::nullopt;
  if (name.rfind("torch.", 0) == 0) name = name.substr(6);
  if (name == "float32") return DType::kF32;
  if (name == "bfloat16") return DType::kBF16;
  if (name == "float16") return DType::kF16;
  if (name == "float64") return DType::kF64;
  r.bad(key, "unknown dtype '" + name + "'", "expected float32, bfloat16 or float16");
}

// SmolLM3Config: no_rope_layers[i] is 1 where layer i uses RoPE; absent, every
// no_rope_layer_interval-th layer (default 4) has none.
std::vector<bool> parse_no_rope_layers(const Reader& r, int64_t layers) {
  std::vector<bool> rope(static_cast<size_t>(layers), true);
  if (const Json* v = r.get("no_rope_layers")) {
    if (!v->is_array() || v->size() != rope.size())
      r.bad("no_rope_layers",
            "expected a list with one 0 or 1 per layer (" + std::to_string(layers) + ")");
    for (size_t i = 0; i < rope.size(); ++i) {
      const int64_t use = r.integer((*v)[i], "no_rope_layers");
      if (use != 0 && use != 1)
        r.bad("no_rope_layers", "entry " + std::to_string(i) + " is " + std::to_string(use),
              "1 = the layer uses RoPE, 0 = it has none");
      rope[i] = use == 1;
    }
    return rope;
  }
  const Json* iv = r.get("no_rope_layer_interval");
  const int64_t interval = iv ? r.integer(*iv, "no_rope_layer_interval") : 4;
  if (interval <= 0) r.bad("no_rope_layer_interval", "expected a positive integer");
  for (int64_t i = 0; i < layers; ++i) rope[static_cast<size_t>(i)] = (i + 1) % interval != 0;
  return rope;
}

// "did you mean 'qwen3'? " for a slip (Qwen3, qwen-3, lama): a supported type within two edits
// once case, '-' and '_' are set aside, and with the same digits: a family's number is no slip
// (olmo3, llama4 and gemma are other models, which no near name would serve).
std::string closest_type_hint(const std::string& name) {
  auto bare = [](std::string_view s) {
    std::string out;
    for (const char ch : s)
      if (ch != '-' && ch != '_')
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out;
  };
  auto digits = [](std::string_view s) {
    std::string out;
    for (const char ch : s)
      if (std::isdigit(static_cast<unsigned char>(ch))) out += ch;
    return out;
  };
  const std::string given = bare(name);
  std::string best;
  size_t best_distance = 3;
  for (const TypeTraits& t : kTypes) {
    const std::string candidate = bare(t.name);
    if (digits(candidate) != digits(given)) continue;
    const size_t d = edit_distance(given, candidate);
    if (d < best_distance) best_distance = d, best = std::string(t.name);
  }
  return best.empty() ? "" : "did you mean '" + best + "'? ";
}

// Phi3Config: fused projections; rope types default and longrope only (its validate_rope), and
// longrope's original_max_position_embeddings from the top-level key (default 4096), its
// factor, absent, max_position_embeddings / that, and one short and long factor per frequency.
void read_phi3(const Reader& r, ModelConfig& c) {
  c.fused_projections = true;
  RopeConfig& rope = c.rope;
  if (rope.type != RopeType::kDefault && rope.type != RopeType::kLongrope)
    r.bad("rope_parameters.rope_type", "Phi3Config takes rope type default or longrope, not " +
                                           std::string(rope_type_name(rope.type)));
  if (rope.type != RopeType::kLongrope) return;
  const Json* v = r.get("original_max_position_embeddings");
  rope.original_max_position_embeddings =
      v ? r.integer(*v, "original_max_position_embeddings") : 4096;
  if (rope.original_max_position_embeddings <= 0)
    r.bad("original_max_position_embeddings", "expected a positive integer");
  const Json& params =
      r.get("rope_parameters") ? *r.get("rope_parameters") : *r.get("rope_scaling");
  if (!r.get(params, "factor"))
    rope.factor = static_cast<double>(c.max_position_embeddings) /
                  static_cast<double>(rope.original_max_position_embeddings);
  const size_t half = static_cast<size_t>(
      static_cast<int64_t>(static_cast<double>(c.head_dim) * rope.partial_rotary_factor) / 2);
  for (const auto& [name, list] : {std::pair{"short_factor", &rope.short_factor},
                                   std::pair{"long_factor", &rope.long_factor}}) {
    if (list->size() != half)
      r.bad(std::string("rope_parameters.") + name,
            "has " + std::to_string(list->size()) + " entries, the rotary dims need " +
                std::to_string(half) + " (head_dim × partial_rotary_factor / 2)");
  }
}

// Gemma's layer_types when config.json has none: Gemma2Config alternates sliding and full
// (layer 0 sliding); Gemma3TextConfig makes every sliding_window_pattern-th layer (default 6)
// full. true = sliding_attention.
std::vector<bool> gemma_layer_types(const Reader& r, int gemma, int64_t layers) {
  int64_t pattern = 2;
  if (gemma == 3) {
    const Json* v = r.get("sliding_window_pattern");
    pattern = v ? r.integer(*v, "sliding_window_pattern") : 6;
    if (pattern <= 0) r.bad("sliding_window_pattern", "expected a positive integer");
  }
  std::vector<bool> out(static_cast<size_t>(layers));
  for (int64_t i = 0; i < layers; ++i) out[static_cast<size_t>(i)] = (i + 1) % pattern != 0;
  return out;
}

// A soft-cap key: absent = the config class's default, null = none, else a positive number.
double softcap_key(const Reader& r, const std::string& key, double fallback) {
  if (!r.has(key)) return fallback;
  const Json* v = r.get(key);
  if (!v) return 0;
  const double cap = r.number(*v, key);
  if (!(cap > 0)) r.bad(key, "expected a positive number or null, got " + v->dump());
  return cap;
}

// Gemma2Config / Gemma3TextConfig beyond the shared keys (TypeKeys::gemma says which).
void read_gemma(const Reader& r, int gemma, ModelConfig& c) {
  c.hidden_act = r.string("hidden_activation", "gelu_pytorch_tanh");
  c.pre_norms = c.post_norms = true;
  c.norm_weight_offset = 1;
  c.norm_output_in_input_dtype = true;  // Gemma2RMSNorm / Gemma3RMSNorm: (x̂ · (1 + w)).type_as(x)
  c.qk_norm = gemma == 3;
  c.embedding_scale_sqrt_hidden = true;
  const Json* scalar = r.get("query_pre_attn_scalar");
  const double q = scalar ? r.number(*scalar, "query_pre_attn_scalar") : 256.0;
  if (!(q > 0)) r.bad("query_pre_attn_scalar", "expected a positive number");
  c.attention_scale = std::pow(q, -0.5);
  // Gemma3Attention keeps attn_logit_softcapping but never passes it to the attention (in
  // transformers 5.24), so for Gemma 3 the key is checked and not applied.
  const double attn_cap = softcap_key(r, "attn_logit_softcapping", gemma == 2 ? 50.0 : 0.0);
  c.attn_logit_softcapping = gemma == 2 ? attn_cap : 0.0;
  c.final_logit_softcapping = softcap_key(r, "final_logit_softcapping", gemma == 2 ? 30.0 : 0.0);
  if (r.boolean("use_bidirectional_attention", false))
    r.bad("use_bidirectional_attention", "bidirectional attention is not supported",
          "sft trains causal language models: set it to false");
  if (gemma != 3) return;
  // The sliding layers' rope: rope_parameters.sliding_attention over rope_local_base_freq
  // (default 10000) as theta, as Gemma3TextConfig.convert_rope_params_to_dict sets it.
  RopeConfig local;
  const Json* base = r.get("rope_local_base_freq");
  local.theta = base ? r.number(*base, "rope_local_base_freq") : 10000.0;
  if (const Json* params = r.get("rope_parameters");
      params && params->is_object() && r.get(*params, "sliding_attention")) {
    const Json& sliding = *r.get(*params, "sliding_attention");
    if (!sliding.is_object())
      r.bad("rope_parameters.sliding_attention",
            "expected an object, got " + json_type_name(sliding));
    read_rope_params(r, local, sliding, "rope_parameters.sliding_attention", false);
  }
  if (local.type == RopeType::kLongrope)
    r.bad("rope_parameters.sliding_attention.rope_type",
          "rope type 'longrope' is read for model_type phi3 only",
          "supported rope types: default, linear, dynamic, llama3, yarn");
  if (local.partial_rotary_factor != c.rope.partial_rotary_factor)
    r.bad("rope_parameters.sliding_attention.partial_rotary_factor",
          "differs from the full-attention layers' (one rotary width for every layer)");
  c.sliding_rope = local;
}

std::vector<int64_t> parse_token_ids(const Reader& r, const std::string& key) {
  const Json* v = r.get(key);
  if (!v) return {};
  if (v->is_array()) {
    std::vector<int64_t> ids;
    for (const Json& id : *v) ids.push_back(r.integer(id, key));
    return ids;
  }
  return {r.integer(*v, key)};
}

}  // namespace

ModelConfig parse_model_config(const Json& json, const std::string& source) {
  if (!json.is_object()) {
    fail_in_file(kComponent, {source, ""}, "expected a JSON object, got " + json_type_name(json),
                 "config.json is the file save_pretrained writes next to the weights");
  }
  Reader r(json, source);
  const std::string type_name = r.string("model_type", "");
  // A multimodal folder (gemma3, mistral3): the text model under text_config.
  if (config_detail::is_multimodal_type(type_name))
    return config_detail::parse_multimodal_config(json, source);
  const TypeTraits* traits = nullptr;
  for (const TypeTraits& t : kTypes) {
    if (t.name == type_name) traits = &t;
  }
  if (traits == nullptr) {
    std::string supported;
    for (const TypeTraits& t : kTypes)
      supported += (supported.empty() ? "" : ", ") + std::string(t.name);
    r.bad("model_type",
          type_name.empty() ? "missing" : "model_type '" + type_name + "' is not supported",
          closest_type_hint(type_name) + "supported model types: " + supported);
  }

  const TypeDefaults& defaults = traits->defaults;
  const TypeKeys& keys = traits->keys;
  ModelConfig c;
  c.model_type = traits->type;
  if (const Json* arch = r.get("architectures"); arch && arch->is_array()) {
    for (const Json& a : *arch) {
      if (a.is_string()) c.architectures.push_back(a.get<std::string>());
    }
  }
  c.vocab_size = r.positive("vocab_size", defaults.vocab_size);
  c.hidden_size = r.positive("hidden_size", defaults.hidden_size);
  c.intermediate_size = r.positive("intermediate_size", defaults.intermediate_size);
  c.num_hidden_layers = r.positive("num_hidden_layers", defaults.num_hidden_layers);
  c.num_attention_heads = r.positive("num_attention_heads", defaults.num_attention_heads);
  c.num_key_value_heads =
      r.positive("num_key_value_heads", defaults.num_key_value_heads ? defaults.num_key_value_heads
                                                                     : c.num_attention_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    r.bad("num_key_value_heads", "num_attention_heads (" + std::to_string(c.num_attention_heads) +
                                     ") is not a multiple of num_key_value_heads (" +
                                     std::to_string(c.num_key_value_heads) + ")");
  }
  const bool head_dim_given = r.get("head_dim") != nullptr;
  if (!head_dim_given && !defaults.head_dim && c.hidden_size % c.num_attention_heads != 0) {
    r.bad("hidden_size", "not divisible by num_attention_heads and no head_dim is given");
  }
  c.head_dim = r.positive(
      "head_dim", defaults.head_dim ? defaults.head_dim : c.hidden_size / c.num_attention_heads);
  c.hidden_act = r.string("hidden_act", "silu");
  c.rms_norm_eps = r.get("rms_norm_eps") ? r.number(*r.get("rms_norm_eps"), "rms_norm_eps")
                                         : defaults.rms_norm_eps;
  c.rope = parse_rope(r, defaults.rope_theta, keys.phi3);
  if (keys.ministral3 && !r.get("rope_parameters") && !r.get("rope_scaling"))
    c.rope = ministral3_default_rope();
  if (keys.moe == MoeFamily::kGptOss && !r.get("rope_parameters") && !r.get("rope_scaling"))
    c.rope = gpt_oss_default_rope(c.rope.theta);
  if (!keys.ministral3) c.rope.llama_4_scaling_beta = 0;  // other attentions ignore the key
  if (c.rope.llama_4_scaling_beta != 0 && c.rope.original_max_position_embeddings <= 0)
    r.bad("rope_parameters.original_max_position_embeddings",
          "llama_4_scaling_beta scales queries by position over this length: it must be positive");
  if (c.rope.type == RopeType::kLongrope && !keys.phi3)  // its factors come with Phi3Config
    r.bad("rope_parameters.rope_type", "rope type 'longrope' is read for model_type phi3 only",
          "supported rope types: default, linear, dynamic, llama3, yarn");
  c.max_position_embeddings =
      r.positive("max_position_embeddings", defaults.max_position_embeddings);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", defaults.tie_word_embeddings);
  if (keys.no_rope_layers) c.layer_rope = parse_no_rope_layers(r, c.num_hidden_layers);

  const bool attention_bias = r.boolean("attention_bias", defaults.attention_bias);
  if (keys.attention_bias) c.qkv_bias = c.o_bias = attention_bias;
  if (keys.mlp_bias) c.mlp_bias = r.boolean("mlp_bias", false);
  if (keys.fixed_qkv_bias) c.qkv_bias = true;
  c.qk_norm = keys.qk_norm || keys.projection_qk_norm_post_norms;
  if (keys.multipliers) {
    auto positive = [&](const char* key) {
      const double v = r.get(key) ? r.number(*r.get(key), key) : 1.0;
      if (!(v > 0)) r.bad(key, "expected a positive number, got " + r.get(key)->dump());
      return v;
    };
    c.embedding_multiplier = positive("embedding_multiplier");
    c.residual_multiplier = positive("residual_multiplier");
    c.logits_scaling = positive("logits_scaling");
    c.attention_scale = positive("attention_multiplier");
  }
  if (keys.phi3) read_phi3(r, c);
  if (keys.gemma) read_gemma(r, keys.gemma, c);
  if (keys.moe != MoeFamily::kNone) config_detail::read_moe(r, c, keys.moe);
  if (keys.projection_qk_norm_post_norms) {
    c.qk_norm_over_projection = true;
    c.norm_output_in_input_dtype = true;  // Olmo2RMSNorm: (w · x̂).to(input_dtype)
    c.pre_norms = false;
    c.post_norms = true;
  }

  // Sliding window: Mistral applies `sliding_window` to every layer; the window_opt_in types
  // only when use_sliding_window, to layers from max_window_layers on — unless layer_types says
  // otherwise.
  std::optional<int64_t> window = r.optional_integer("sliding_window");
  // Absent (not null): the config class's default, as transformers fills it in.
  if (!r.has("sliding_window") && defaults.sliding_window > 0) window = defaults.sliding_window;
  if (keys.window_opt_in && !r.boolean("use_sliding_window", false)) window.reset();
  if (window && *window <= 0) r.bad("sliding_window", "expected a positive integer or null");
  c.sliding_window = window;
  c.layer_sliding_window.assign(static_cast<size_t>(c.num_hidden_layers), false);
  if (const Json* types = r.get("layer_types")) {
    if (!types->is_array() || types->size() != static_cast<size_t>(c.num_hidden_layers)) {
      r.bad("layer_types", "expected a list with one entry per layer (" +
                               std::to_string(c.num_hidden_layers) + ")");
    }
    for (size_t i = 0; i < types->size(); ++i) {
      const Json& t = (*types)[i];
      if (t != "full_attention" && t != "sliding_attention") {
        r.bad("layer_types", "entry " + std::to_string(i) + " is " + t.dump(),
              "expected \"full_attention\" or \"sliding_attention\"");
      }
      c.layer_sliding_window[i] = window.has_value() && t == "sliding_attention";
      if (c.sliding_rope) c.layer_rope_set.push_back(t == "sliding_attention" ? 1 : 0);
    }
  } else if (keys.gemma || keys.moe == MoeFamily::kGptOss) {
    // GptOssConfig alternates as Gemma2Config does (layer 0 sliding).
    const std::vector<bool> sliding = gemma_layer_types(r, keys.gemma, c.num_hidden_layers);
    for (size_t i = 0; i < sliding.size(); ++i) {
      c.layer_sliding_window[i] = window.has_value() && sliding[i];
      if (c.sliding_rope) c.layer_rope_set.push_back(sliding[i] ? 1 : 0);
    }
  } else if (window && keys.no_rope_layers) {
    for (size_t i = 0; i < c.layer_rope.size(); ++i) c.layer_sliding_window[i] = !c.layer_rope[i];
  } else if (window) {
    int64_t first = 0;
    if (keys.window_opt_in && keys.moe != MoeFamily::kQwen3Moe) {
      const Json* v = r.get("max_window_layers");
      first = v ? r.integer(*v, "max_window_layers") : 28;
    }
    for (int64_t i = first; i < c.num_hidden_layers; ++i)
      c.layer_sliding_window[static_cast<size_t>(i)] = true;
  }
  if (window && std::none_of(c.layer_sliding_window.begin(), c.layer_sliding_window.end(),
                             [](bool b) { return b; })) {
    c.sliding_window.reset();  // enabled but no layer uses it: the model is full attention
  }

  c.bos_token_id = r.optional_integer("bos_token_id");
  c.eos_token_ids = parse_token_ids(r, "eos_token_id");
  c.pad_token_id = r.optional_integer("pad_token_id");
  c.dtype = parse_torch_dtype(r);
  return c;
}

ModelConfig load_model_config(const std::string& config_json_path) {
  return parse_model_config(read_json_file(config_json_path, kComponent), config_json_path);
}

std::string_view model_type_name(ModelType type) {
  return traits_of(type).name;
}

std::string_view rope_type_name(RopeType type) {
  for (const RopeTypeName& t : kRopeTypes) {
    if (t.type == type) return t.name;
  }
  return "?";
}

namespace {

Json rope_to_json(const RopeConfig& r) {
  Json j = {{"rope_theta", r.theta}, {"rope_type", std::string(rope_type_name(r.type))}};
  if (r.type != RopeType::kDefault) j["factor"] = r.factor;
  if (r.type == RopeType::kLlama3) {
    j["low_freq_factor"] = r.low_freq_factor;
    j["high_freq_factor"] = r.high_freq_factor;
  }
  if (r.original_max_position_embeddings > 0)
    j["original_max_position_embeddings"] = r.original_max_position_embeddings;
  if (r.type == RopeType::kYarn) {
    if (r.attention_factor) j["attention_factor"] = *r.attention_factor;
    j["beta_fast"] = r.beta_fast;
    j["beta_slow"] = r.beta_slow;
    if (r.mscale) j["mscale"] = *r.mscale;
    if (r.mscale_all_dim) j["mscale_all_dim"] = *r.mscale_all_dim;
    j["truncate"] = r.truncate;
  }
  if (r.llama_4_scaling_beta != 0) j["llama_4_scaling_beta"] = r.llama_4_scaling_beta;
  if (r.type == RopeType::kLongrope) {
    if (r.attention_factor) j["attention_factor"] = *r.attention_factor;
    j["short_factor"] = r.short_factor;
    j["long_factor"] = r.long_factor;
  }
  if (r.partial_rotary_factor != 1.0) j["partial_rotary_factor"] = r.partial_rotary_factor;
  return j;
}

template <typename T>
Json optional_json(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

}  // namespace

Json model_config_to_json(const ModelConfig& c) {
  const TypeTraits& traits = traits_of(c.model_type);
  Json j;
  j["architectures"] = c.architectures;
  j["model_type"] = std::string(traits.name);
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  if (traits.keys.gemma)
    j["hidden_activation"] = c.hidden_act;
  else
    j["hidden_act"] = c.hidden_act;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_parameters"] = rope_to_json(c.rope);
  if (c.sliding_rope)
    j["rope_parameters"] = {{"full_attention", rope_to_json(c.rope)},
                            {"sliding_attention", rope_to_json(*c.sliding_rope)}};
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  // Only the keys the type's config class has (Qwen2 hard-codes its biases, Mistral has none).
  if (traits.keys.attention_bias) j["attention_bias"] = c.o_bias;
  if (traits.keys.mlp_bias) j["mlp_bias"] = c.mlp_bias;
  j["sliding_window"] = optional_json(c.sliding_window);
  if (traits.keys.window_opt_in) j["use_sliding_window"] = c.sliding_window.has_value();
  Json types = Json::array();
  for (size_t l = 0; l < c.layer_sliding_window.size(); ++l) {
    // Gemma 3's sliding layers are sliding by their rope set even without a window.
    const bool sliding =
        c.layer_sliding_window[l] || (l < c.layer_rope_set.size() && c.layer_rope_set[l] == 1);
    types.push_back(sliding ? "sliding_attention" : "full_attention");
  }
  j["layer_types"] = types;
  if (traits.keys.multipliers) {
    j["embedding_multiplier"] = c.embedding_multiplier;
    j["residual_multiplier"] = c.residual_multiplier;
    j["logits_scaling"] = c.logits_scaling;
    j["attention_multiplier"] = c.attention_scale.value_or(1.0);
  }
  if (traits.keys.gemma) {
    // query_pre_attn_scalar back from its scale (an integer in every Gemma config).
    const double scale = c.attention_scale.value_or(1.0 / std::sqrt(double(c.head_dim)));
    const double scalar = 1.0 / (scale * scale);
    j["query_pre_attn_scalar"] = std::abs(scalar - std::round(scalar)) < 1e-6 * scalar
                                     ? Json(static_cast<int64_t>(std::round(scalar)))
                                     : Json(scalar);
    auto cap = [](double v) { return v > 0 ? Json(v) : Json(nullptr); };
    if (traits.keys.gemma == 2) j["attn_logit_softcapping"] = cap(c.attn_logit_softcapping);
    j["final_logit_softcapping"] = cap(c.final_logit_softcapping);
  }
  if (traits.keys.phi3 && c.rope.original_max_position_embeddings > 0)
    j["original_max_position_embeddings"] = c.rope.original_max_position_embeddings;
  if (traits.keys.no_rope_layers) {
    Json rope = Json::array();
    for (size_t i = 0; i < static_cast<size_t>(c.num_hidden_layers); ++i)
      rope.push_back(i < c.layer_rope.size() && !c.layer_rope[i] ? 0 : 1);
    j["no_rope_layers"] = rope;
  }
  if (traits.keys.moe != MoeFamily::kNone) config_detail::write_moe(c, traits.keys.moe, j);
  j["bos_token_id"] = optional_json(c.bos_token_id);
  if (c.eos_token_ids.size() == 1) {
    j["eos_token_id"] = c.eos_token_ids[0];
  } else if (c.eos_token_ids.empty()) {
    j["eos_token_id"] = nullptr;
  } else {
    j["eos_token_id"] = c.eos_token_ids;
  }
  j["pad_token_id"] = optional_json(c.pad_token_id);
  j["use_cache"] = true;
  return j;
}

}  // namespace sft
