#include "model/config.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "model/model_dir.h"
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
  EXPECT_EQ(error_of(R"({"model_type": "gpt2"})"),
            "[config] config.json: key 'model_type': model_type 'gpt2' is not supported "
            "(hint: supported model types: llama, mistral, qwen2, qwen3, smollm3, olmo2, granite)");
  // A slip gets the near name; another family only the list.
  EXPECT_NE(error_of(R"({"model_type": "Qwen-3"})").find("(hint: did you mean 'qwen3'? supported"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"model_type": "gemma3_text"})").find("did you mean"), std::string::npos);
  EXPECT_EQ(error_of(R"({"model_type": "qwen3_moe"})").find("did you mean"), std::string::npos);
  EXPECT_EQ(error_of(R"({"model_type": "olmo"})").find("did you mean"), std::string::npos);
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

}  // namespace sft
