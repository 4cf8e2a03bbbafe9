#include "model/config.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "model/lora.h"
#include "model/model_dir.h"
#include "model/param_layout.h"
#include "model/rope.h"
#include "model/tensor_parallel.h"

namespace sft {

namespace {

ModelConfig parse(const std::string& text) {
  return parse_model_config(parse_json_strict(text, "test", "config.json"), "config.json");
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ModelConfig, TransformersV4StyleLlama) {
  ModelConfig c = parse(R"({"model_type": "llama", "vocab_size": 128256, "hidden_size": 2048,
    "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
    "rope_theta": 500000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "max_position_embeddings": 131072})");
  EXPECT_EQ(c.model_type, ModelType::kLlama);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.rope.type, RopeType::kLlama3);
  EXPECT_EQ(c.rope.theta, 500000.0);
  EXPECT_EQ(c.rope.factor, 32.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(c.dtype, DType::kBF16);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.sliding_window.has_value());
}

TEST(ModelConfig, TransformersV5StyleQwen3) {
  ModelConfig c = parse(R"({"model_type": "qwen3", "vocab_size": 151936, "hidden_size": 1024,
    "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
    "head_dim": 128, "rope_parameters": {"rope_theta": 1000000, "rope_type": "default"}, "dtype": "bfloat16",
    "use_sliding_window": false, "sliding_window": null, "max_window_layers": 28, "eos_token_id": 151645,
    "tie_word_embeddings": true})");
  EXPECT_EQ(c.head_dim, 128);  // not hidden / heads (64)
  EXPECT_EQ(c.rope.theta, 1e6);
  EXPECT_EQ(c.rope.type, RopeType::kDefault);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_FALSE(c.sliding_window.has_value());
}

TEST(ModelConfig, BiasAndSlidingWindowAreData) {
  ModelConfig qwen2 = parse(R"({"model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_hidden_layers": 4, "use_sliding_window": true, "sliding_window": 32, "max_window_layers": 2})");
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_FALSE(qwen2.o_bias);
  EXPECT_EQ(qwen2.sliding_window, 32);
  EXPECT_EQ(qwen2.layer_sliding_window, (std::vector<bool>{false, false, true, true}));

  ModelConfig mistral =
      parse(R"({"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_hidden_layers": 2, "sliding_window": 16})");
  EXPECT_EQ(mistral.sliding_window, 16);
  EXPECT_EQ(mistral.layer_sliding_window, (std::vector<bool>{true, true}));
  ModelConfig no_window =
      parse(R"({"model_type": "mistral", "num_hidden_layers": 2, "sliding_window": null})");
  EXPECT_FALSE(no_window.sliding_window.has_value());

  ModelConfig llama = parse(R"({"model_type": "llama", "attention_bias": true, "mlp_bias": true})");
  EXPECT_TRUE(llama.qkv_bias && llama.o_bias && llama.mlp_bias);
  EXPECT_EQ(llama.num_key_value_heads, llama.num_attention_heads);  // default: no GQA
}

// SmolLM3Config: a NoPE layer every no_rope_layer_interval layers when no_rope_layers is
// absent, the window on them with use_sliding_window; tied, rope theta 2e6 by default.
TEST(ModelConfig, SmolLM3LayersWithoutRopeAreData) {
  const ModelConfig c = parse(R"({"model_type": "smollm3", "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 8,
    "use_sliding_window": true, "sliding_window": 32})");
  EXPECT_EQ(c.layer_rope, (std::vector<bool>{true, true, true, false, true, true, true, false}));
  EXPECT_EQ(c.layer_sliding_window,
            (std::vector<bool>{false, false, false, true, false, false, false, true}));
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope.theta, 2000000.0);
  const ModelConfig given = parse(R"({"model_type": "smollm3", "num_hidden_layers": 3,
    "no_rope_layers": [1, 0, 1], "no_rope_layer_interval": 2})");
  EXPECT_EQ(given.layer_rope, (std::vector<bool>{true, false, true}));
  EXPECT_FALSE(given.sliding_window.has_value());
  EXPECT_NE(
      error_of(R"({"model_type": "smollm3", "num_hidden_layers": 2, "no_rope_layers": [1, 2]})")
          .find("key 'no_rope_layers': entry 1 is 2"),
      std::string::npos);
  // Written back for an export, and read the same.
  const ModelConfig again = parse_model_config(model_config_to_json(given), "again");
  EXPECT_EQ(again.layer_rope, given.layer_rope);
}

// Olmo2Config: post norms only, q/k norms over the whole projections, rms_norm_eps 1e-5; its q/k
// norm spans every head, so tensor parallelism is refused naming it.
TEST(ModelConfig, Olmo2NormsAreData) {
  const ModelConfig c = parse(R"({"model_type": "olmo2", "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2})");
  EXPECT_FALSE(c.pre_norms);
  EXPECT_TRUE(c.post_norms);
  EXPECT_TRUE(c.qk_norm && c.qk_norm_over_projection);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_FALSE(c.tie_word_embeddings);
  const ModelConfig again = parse_model_config(model_config_to_json(c), "again");
  EXPECT_TRUE(again.post_norms && again.qk_norm_over_projection);
  try {
    model::check_tensor_parallel(c, 2, "--tp_size 2");
    ADD_FAILURE() << "tensor parallelism accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("self_attn.q_norm, k_norm) spans every head"),
              std::string::npos)
        << e.what();
  }
}

// GraniteConfig: the multipliers as data; attention_multiplier is the attention scale itself
// (1.0 when absent, not 1/sqrt(head_dim)).
TEST(ModelConfig, GraniteMultipliersAreData) {
  const ModelConfig plain = parse(R"({"model_type": "granite", "hidden_size": 64,
    "num_attention_heads": 4, "num_hidden_layers": 2})");
  EXPECT_EQ(plain.attention_scale, 1.0);
  EXPECT_EQ(plain.embedding_multiplier, 1.0);
  const ModelConfig c = parse(R"({"model_type": "granite", "hidden_size": 64,
    "num_attention_heads": 4, "num_hidden_layers": 2, "embedding_multiplier": 12,
    "residual_multiplier": 0.22, "attention_multiplier": 0.0078125, "logits_scaling": 8})");
  EXPECT_EQ(c.embedding_multiplier, 12.0);
  EXPECT_EQ(c.residual_multiplier, 0.22);
  EXPECT_EQ(c.attention_scale, 0.0078125);
  EXPECT_EQ(c.logits_scaling, 8.0);
  const ModelConfig again = parse_model_config(model_config_to_json(c), "again");
  EXPECT_EQ(again.residual_multiplier, 0.22);
  EXPECT_EQ(again.attention_scale, 0.0078125);
  EXPECT_NE(error_of(R"({"model_type": "granite", "logits_scaling": 0})")
                .find("key 'logits_scaling': expected a positive number, got 0"),
            std::string::npos);
}

// Phi3Config: qkv_proj and gate_up_proj fused as stored (their parts have no tensor of their
// own), rms_norm_eps 1e-5, longrope's original_max_position_embeddings from the top-level key
// (4096 when absent), its factor max / original when absent, its attention factor
// sqrt(1 + ln factor / ln original), and the factor set by the call's length.
TEST(ModelConfig, Phi3FusedProjectionsAndLongropeAreData) {
  const std::string longrope = R"({"model_type": "phi3", "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
    "intermediate_size": 96, "max_position_embeddings": 128, "original_max_position_embeddings": 8,
    "rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
      "original_max_position_embeddings": 99, "short_factor": [1, 1, 2, 4],
      "long_factor": [2, 3, 5, 7]}})";
  const ModelConfig c = parse(longrope);
  EXPECT_TRUE(c.fused_projections);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope.type, RopeType::kLongrope);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 8);
  EXPECT_EQ(c.rope.factor, 16.0);
  const model::RopeFrequencies short_set = model::rope_frequencies(c, 8);
  const model::RopeFrequencies long_set = model::rope_frequencies(c, 9);
  ASSERT_EQ(short_set.inv_freq.size(), 4u);
  EXPECT_FLOAT_EQ(short_set.inv_freq[3], 1.0f / (4.0f * static_cast<float>(std::pow(10.0, 3.0))));
  EXPECT_FLOAT_EQ(long_set.inv_freq[3], 1.0f / (7.0f * static_cast<float>(std::pow(10.0, 3.0))));
  EXPECT_DOUBLE_EQ(long_set.attention_scaling, std::sqrt(1 + std::log(16.0) / std::log(8.0)));
  EXPECT_EQ(short_set.attention_scaling, long_set.attention_scaling);
  const ModelConfig again = parse_model_config(model_config_to_json(c), "again");
  EXPECT_EQ(again.rope.original_max_position_embeddings, 8);
  EXPECT_EQ(again.rope.long_factor, c.rope.long_factor);
  EXPECT_TRUE(again.fused_projections);

  std::vector<std::string> names;
  for (const ParamSpec& p : parameter_layout(c))
    if (p.layer == 0) names.push_back(p.name.substr(std::string("model.layers.0.").size()));
  EXPECT_EQ(names,
            (std::vector<std::string>{"input_layernorm.weight", "self_attn.qkv_proj.weight",
                                      "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                                      "mlp.gate_up_proj.weight", "mlp.down_proj.weight"}));
  EXPECT_EQ(parameter_layout(c)[2].shape, (Shape{16 * 4 + 2 * 16 * 2, 64}));

  // Phi3Config's aliases su / yarn, and its refusals.
  std::string su = longrope;
  su.replace(su.find("\"longrope\""), 10, "\"su\"");
  EXPECT_EQ(parse(su).rope.type, RopeType::kLongrope);
  std::string shorter = longrope;
  shorter.replace(shorter.find("[1, 1, 2, 4]"), 12, "[1, 1, 2]");
  EXPECT_NE(error_of(shorter).find("short_factor': has 3 entries, the rotary dims need 4"),
            std::string::npos)
      << error_of(shorter);
  EXPECT_NE(error_of(R"({"model_type": "phi3", "rope_scaling": {"type": "linear", "factor": 2}})")
                .find("Phi3Config takes rope type default or longrope, not linear"),
            std::string::npos);
  try {
    model::check_tensor_parallel(c, 2, "--tp_size 2");
    ADD_FAILURE() << "tensor parallelism accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one self_attn.qkv_proj"), std::string::npos) << e.what();
  }
  // LoRA: PEFT has no default targets for phi3 and no q_proj ... up_proj modules there; the
  // fused modules are targets, and all-linear is the four stored projections.
  for (const std::vector<std::string>& targets :
       {std::vector<std::string>{}, {"q_proj"}, {"o_proj", "mlp.gate_proj"}}) {
    model::LoraConfig lc;
    lc.target_modules = targets;
    try {
      model::resolve_lora_targets(lc, c, "--use_peft");
      ADD_FAILURE() << "LoRA targets accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(targets.empty() ? "PEFT has no default" : "fused"),
                std::string::npos)
          << e.what();
    }
  }
  model::LoraConfig plain;
  plain.target_modules = {"o_proj", "down_proj"};
  EXPECT_EQ(model::resolve_lora_targets(plain, c, "--use_peft").size(), 2u);
  plain.target_modules = {"all-linear"};
  EXPECT_EQ(model::resolve_lora_targets(plain, c, "--use_peft"),
            (std::vector<std::string>{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}));
}

// Ministral3Config: Mistral's layers with its own defaults, YaRN (factor 16 over 16384
// positions, theta 1e6, mscale 1) with Llama 4's query scaling (beta 0.1) when config.json has no
// rope_parameters; the scaling round-trips, and another family's llama_4_scaling_beta is ignored
// as its attention ignores it.
TEST(ModelConfig, Ministral3DefaultsAndQueryScaling) {
  const ModelConfig d = parse(R"({"model_type": "ministral3"})");
  EXPECT_EQ(d.model_type, ModelType::kMinistral3);
  EXPECT_EQ(d.num_hidden_layers, 34);
  EXPECT_EQ(d.head_dim, 128);
  EXPECT_EQ(d.vocab_size, 131072);
  EXPECT_FALSE(d.sliding_window);
  EXPECT_EQ(d.rms_norm_eps, 1e-5);
  EXPECT_EQ(d.rope.type, RopeType::kYarn);
  EXPECT_EQ(d.rope.theta, 1e6);
  EXPECT_EQ(d.rope.factor, 16.0);
  EXPECT_EQ(d.rope.original_max_position_embeddings, 16384);
  EXPECT_EQ(d.rope.llama_4_scaling_beta, 0.1);
  const ModelConfig again = parse_model_config(model_config_to_json(d), "again");
  EXPECT_EQ(again.model_type, ModelType::kMinistral3);
  EXPECT_EQ(again.rope.llama_4_scaling_beta, 0.1);
  EXPECT_EQ(again.rope.original_max_position_embeddings, 16384);

  const ModelConfig m = parse(R"({"model_type": "mistral", "rope_parameters": {"rope_type": "yarn",
    "factor": 2.0, "original_max_position_embeddings": 8, "llama_4_scaling_beta": 0.5}})");
  EXPECT_EQ(m.rope.llama_4_scaling_beta, 0.0);
  EXPECT_NE(error_of(R"({"model_type": "ministral3", "rope_parameters": {"rope_type": "default",
    "llama_4_scaling_beta": 0.5}})")
                .find("original_max_position_embeddings"),
            std::string::npos);
}

// MinistralConfig: Mistral's defaults (32 layers, 8 KV heads, window 4096, rope_theta 1e4,
// rms_norm_eps 1e-6, untied); every layer slides without layer_types, and layer_types picks
// them when present (and round-trips).
TEST(ModelConfig, MinistralLayerTypesAreData) {
  const ModelConfig d = parse(R"({"model_type": "ministral"})");
  EXPECT_EQ(d.model_type, ModelType::kMinistral);
  EXPECT_EQ(d.num_hidden_layers, 32);
  EXPECT_EQ(d.num_key_value_heads, 8);
  EXPECT_EQ(d.head_dim, 128);
  EXPECT_EQ(d.sliding_window, 4096);
  EXPECT_EQ(d.rope.theta, 10000.0);
  EXPECT_EQ(d.rms_norm_eps, 1e-6);
  EXPECT_FALSE(d.tie_word_embeddings);
  EXPECT_FALSE(d.qkv_bias);
  EXPECT_EQ(std::count(d.layer_sliding_window.begin(), d.layer_sliding_window.end(), true), 32);

  const ModelConfig c = parse(R"({"model_type": "ministral", "hidden_size": 64,
    "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 3, "sliding_window": 5,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]})");
  EXPECT_EQ(c.layer_sliding_window, (std::vector<bool>{true, false, true}));
  const ModelConfig again = parse_model_config(model_config_to_json(c), "again");
  EXPECT_EQ(again.model_type, ModelType::kMinistral);
  EXPECT_EQ(again.layer_sliding_window, c.layer_sliding_window);
  EXPECT_EQ(again.sliding_window, 5);
  EXPECT_NE(error_of(R"({"model_type": "ministral", "num_hidden_layers": 2,
    "layer_types": ["sliding_attention"]})")
                .find("layer_types"),
            std::string::npos);
}

TEST(ModelConfig, ParsesEveryRopeType) {
  EXPECT_EQ(parse(R"({"model_type": "llama", "rope_scaling": {"type": "linear", "factor": 2.0}})")
                .rope.type,
            RopeType::kLinear);
  EXPECT_EQ(
      parse(R"({"model_type": "llama", "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}})")
          .rope.type,
      RopeType::kDynamic);
  ModelConfig yarn =
      parse(R"({"model_type": "qwen2", "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 32768, "beta_fast": 16}})");
  EXPECT_EQ(yarn.rope.type, RopeType::kYarn);
  EXPECT_EQ(yarn.rope.beta_fast, 16.0);
  EXPECT_EQ(yarn.rope.beta_slow, 1.0);
}

TEST(ModelConfig, ErrorsNameTheKeyAndHelp) {
  EXPECT_EQ(
      error_of(R"({"model_type": "gpt2"})"),
      "[config] config.json: key 'model_type': model_type 'gpt2' is not supported "
      "(hint: supported model types: llama, mistral, qwen2, qwen3, smollm3, olmo2, granite, phi3, "
      "ministral, ministral3, gemma2, gemma3_text, qwen3_moe, olmoe, mixtral, "
      "granitemoe, gpt_oss)");
  // A slip gets the near name; another family only the list.
  EXPECT_NE(error_of(R"({"model_type": "Qwen-3"})").find("(hint: did you mean 'qwen3'? supported"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"model_type": "gemma"})").find("did you mean"), std::string::npos);
  EXPECT_EQ(error_of(R"({"model_type": "llama4"})").find("did you mean"), std::string::npos);
  EXPECT_EQ(error_of(R"({"model_type": "olmo3"})").find("did you mean"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "gpt-oss"})").find("did you mean 'gpt_oss'?"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "lama"})").find("did you mean 'llama'?"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "llama", "hidden_size": "big"})")
                .find("key 'hidden_size': expected an integer"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"model_type": "llama", "num_attention_heads": 6, "num_key_value_heads": 4})")
          .find("not a multiple"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "llama", "rope_scaling": {"rope_type": "longrope"}})")
                .find("supported rope types"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"model_type": "llama", "torch_dtype": "int4"})").find("unknown dtype 'int4'"),
      std::string::npos);
  EXPECT_NE(error_of("[]").find("expected a JSON object"), std::string::npos);
}

}  // namespace sft

namespace sft {

// A config/weights mismatch lists one tensor per line, at most 10, then how many more.
TEST(ModelDir, MismatchIsOneTensorPerLine) {
  LayoutMismatch mm;
  for (int i = 0; i < 14; ++i) mm.missing.push_back("model.layers." + std::to_string(i) + ".w");
  mm.unexpected.push_back("extra");
  const std::string text = describe_mismatch(mm);
  EXPECT_EQ(text.rfind("\n  missing model.layers.0.w\n  missing model.layers.1.w", 0), 0u) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 11);
  EXPECT_NE(text.find("\n  ... and 5 more"), std::string::npos) << text;
  LayoutMismatch one;
  one.wrong_shape.push_back("a: checkpoint [2], config implies [3]");
  EXPECT_EQ(describe_mismatch(one), "\n  wrong shape a: checkpoint [2], config implies [3]");
}

// Gemma3TextConfig's defaults: gelu_pytorch_tanh, (1 + w) pre and post norms, q/k norms,
// query_pre_attn_scalar 256, no soft-caps, window 4096, every 6th layer full, full layers'
// theta 1e6 and the sliding layers' 1e4 (rope_local_base_freq), tied, sqrt(hidden) embeddings.
TEST(ModelConfig, Gemma3TextDefaults) {
  const ModelConfig c = parse(R"({"model_type": "gemma3_text", "num_hidden_layers": 7})");
  EXPECT_EQ(c.model_type, ModelType::kGemma3Text);
  EXPECT_EQ(c.hidden_act, "gelu_pytorch_tanh");
  EXPECT_EQ(c.vocab_size, 262208);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_TRUE(c.pre_norms && c.post_norms);
  EXPECT_EQ(c.norm_weight_offset, 1.0);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qk_norm_over_projection);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.embedding_scale_sqrt_hidden);
  EXPECT_DOUBLE_EQ(*c.attention_scale, 1.0 / 16.0);
  EXPECT_EQ(c.attn_logit_softcapping, 0.0);
  EXPECT_EQ(c.final_logit_softcapping, 0.0);
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.layer_sliding_window, (std::vector<bool>{true, true, true, true, true, false, true}));
  EXPECT_EQ(c.layer_rope_set, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0, 1}));
  EXPECT_EQ(c.rope.theta, 1000000.0);
  ASSERT_TRUE(c.sliding_rope.has_value());
  EXPECT_EQ(c.sliding_rope->theta, 10000.0);
  // PEFT's default LoRA targets for gemma3_text (and gemma2): q_proj, v_proj.
  EXPECT_EQ(model::resolve_lora_targets(model::LoraConfig{}, c, "--use_peft"),
            (std::vector<std::string>{"q_proj", "v_proj"}));
}

// The keys over the defaults: hidden_activation (not hidden_act), query_pre_attn_scalar, both
// soft-caps, sliding_window_pattern, rope_local_base_freq and rope_theta (the 4.x form),
// rope_parameters per layer type (the 5.x form), layer_types, and a null window.
TEST(ModelConfig, Gemma3TextKeys) {
  const ModelConfig c = parse(R"({"model_type": "gemma3_text", "num_hidden_layers": 4,
    "hidden_size": 64, "num_attention_heads": 4, "head_dim": 16, "hidden_act": "silu",
    "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 24,
    "attn_logit_softcapping": 3.0, "final_logit_softcapping": 4.0, "sliding_window": 5,
    "sliding_window_pattern": 2, "rope_theta": 5000.0, "rope_local_base_freq": 500.0,
    "tie_word_embeddings": false})");
  EXPECT_EQ(c.hidden_act, "gelu_pytorch_tanh");
  EXPECT_DOUBLE_EQ(*c.attention_scale, std::pow(24.0, -0.5));
  EXPECT_EQ(c.attn_logit_softcapping, 0.0);  // read, but Gemma3Attention never applies it
  EXPECT_EQ(c.final_logit_softcapping, 4.0);
  EXPECT_EQ(c.sliding_window, 5);
  EXPECT_EQ(c.layer_sliding_window, (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(c.layer_rope_set, (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_EQ(c.rope.theta, 5000.0);
  EXPECT_EQ(c.sliding_rope->theta, 500.0);
  EXPECT_FALSE(c.tie_word_embeddings);

  const ModelConfig v5 = parse(R"({"model_type": "gemma3_text", "num_hidden_layers": 3,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
    "sliding_window": null,
    "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0}}})");
  EXPECT_FALSE(v5.sliding_window.has_value());
  EXPECT_EQ(v5.layer_sliding_window, (std::vector<bool>{false, false, false}));
  EXPECT_EQ(v5.layer_rope_set, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(v5.rope.type, RopeType::kLinear);
  EXPECT_EQ(v5.rope.factor, 8.0);
  EXPECT_EQ(v5.sliding_rope->type, RopeType::kDefault);
  EXPECT_EQ(v5.sliding_rope->theta, 1000.0);

  // Written back in the 5.x form and read again to the same config.
  for (const ModelConfig* m : {&c, &v5}) {
    const Json j = model_config_to_json(*m);
    EXPECT_EQ(j["hidden_activation"], "gelu_pytorch_tanh");
    EXPECT_FALSE(j.contains("hidden_act"));
    const ModelConfig again = parse_model_config(j, "again");
    EXPECT_EQ(again.model_type, ModelType::kGemma3Text);
    EXPECT_EQ(again.attention_scale, m->attention_scale);
    EXPECT_EQ(again.attn_logit_softcapping, m->attn_logit_softcapping);
    EXPECT_EQ(again.final_logit_softcapping, m->final_logit_softcapping);
    EXPECT_EQ(again.sliding_window, m->sliding_window);
    EXPECT_EQ(again.layer_sliding_window, m->layer_sliding_window);
    EXPECT_EQ(again.layer_rope_set, m->layer_rope_set);
    EXPECT_EQ(again.rope.theta, m->rope.theta);
    EXPECT_EQ(again.rope.type, m->rope.type);
    EXPECT_EQ(again.sliding_rope->theta, m->sliding_rope->theta);
    EXPECT_EQ(again.tie_word_embeddings, m->tie_word_embeddings);
  }
  EXPECT_EQ(model_config_to_json(c)["query_pre_attn_scalar"], 24);

  EXPECT_NE(error_of(R"({"model_type": "gemma3_text", "use_bidirectional_attention": true})")
                .find("key 'use_bidirectional_attention'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "gemma3_text", "attn_logit_softcapping": "x"})")
                .find("key 'attn_logit_softcapping'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "gemma3_text", "final_logit_softcapping": -1})")
                .find("key 'final_logit_softcapping': expected a positive number"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "gemma3_text", "query_pre_attn_scalar": 0})")
                .find("key 'query_pre_attn_scalar'"),
            std::string::npos);
}

// Gemma3Config (model_type gemma3): the text model is text_config's, with the outer
// tie_word_embeddings, dtype and token ids where text_config has none.
TEST(ModelConfig, Gemma3ReadsTextConfig) {
  const ModelConfig c = parse(R"({"model_type": "gemma3", "architectures":
    ["Gemma3ForConditionalGeneration"], "dtype": "bfloat16", "eos_token_id": [1, 106],
    "tie_word_embeddings": false, "vision_config": {"model_type": "siglip_vision_model"},
    "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "num_hidden_layers": 34,
                    "eos_token_id": 1, "query_pre_attn_scalar": 256}})");
  EXPECT_EQ(c.model_type, ModelType::kGemma3Text);
  EXPECT_EQ(c.hidden_size, 2560);
  EXPECT_EQ(c.num_hidden_layers, 34);
  EXPECT_EQ(c.dtype, DType::kBF16);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1}));
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.architectures, (std::vector<std::string>{"Gemma3ForCausalLM"}));
  EXPECT_EQ(parse(R"({"model_type": "gemma3"})").num_hidden_layers, 26);
  EXPECT_NE(error_of(R"({"model_type": "gemma3", "text_config": {"head_dim": "x"}})")
                .find("config.json (text_config)"),
            std::string::npos);
}

// Gemma2Config: no q/k norms, one rope, soft-caps 50 and 30 by default (null turns one off),
// every other layer sliding (layer 0 first), window 4096.
TEST(ModelConfig, Gemma2DefaultsAndKeys) {
  const ModelConfig c = parse(R"({"model_type": "gemma2", "num_hidden_layers": 4})");
  EXPECT_EQ(c.model_type, ModelType::kGemma2);
  EXPECT_EQ(c.vocab_size, 256000);
  EXPECT_EQ(c.max_position_embeddings, 8192);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.pre_norms && c.post_norms);
  EXPECT_EQ(c.norm_weight_offset, 1.0);
  EXPECT_EQ(c.attn_logit_softcapping, 50.0);
  EXPECT_EQ(c.final_logit_softcapping, 30.0);
  EXPECT_DOUBLE_EQ(*c.attention_scale, 1.0 / 16.0);
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.layer_sliding_window, (std::vector<bool>{true, false, true, false}));
  EXPECT_TRUE(c.layer_rope_set.empty());
  EXPECT_FALSE(c.sliding_rope.has_value());
  EXPECT_EQ(c.rope.theta, 10000.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  const ModelConfig off = parse(R"({"model_type": "gemma2", "attn_logit_softcapping": null,
    "final_logit_softcapping": 12.5, "rope_theta": 20000.0})");
  EXPECT_EQ(off.attn_logit_softcapping, 0.0);
  EXPECT_EQ(off.final_logit_softcapping, 12.5);
  EXPECT_EQ(off.rope.theta, 20000.0);
  const ModelConfig again = parse_model_config(model_config_to_json(off), "again");
  EXPECT_EQ(again.attn_logit_softcapping, 0.0);
  EXPECT_EQ(again.final_logit_softcapping, 12.5);
  EXPECT_EQ(again.layer_sliding_window, off.layer_sliding_window);
  EXPECT_EQ(again.rope.theta, 20000.0);
}

}  // namespace sft
