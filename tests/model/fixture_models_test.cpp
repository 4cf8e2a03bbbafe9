// The tiny models transformers saved (tools/make_model_fixtures.py): every tensor loads
// bit-exactly, the config-implied layout matches the checkpoint, and our parameter counts
// equal transformers' num_parameters().
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "io/json.h"
#include "model/model_summary.h"
#include "test_paths.h"

namespace sft {

namespace {

uint64_t fnv1a64(std::span<const std::byte> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::byte b : bytes) {
    h ^= std::to_integer<uint64_t>(b);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string fixture_dir(const std::string& name) {
  return test::source_path("tests/fixtures/models/" + name);
}

Json expectations() {
  return read_json_file(test::source_path("tests/fixtures/models/expected.json"), "test");
}

}  // namespace

TEST(FixtureModels, EveryTensorLoadsBitExactly) {
  const Json all = expectations();
  int fixtures = 0;
  for (const auto& [name, want] : all.items()) {
    if (name.front() == '_') continue;
    SCOPED_TRACE(name);
    ++fixtures;
    SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open_dir(fixture_dir(name));
    ASSERT_EQ(checkpoint.names().size(), want["tensors"].size());
    for (const Json& t : want["tensors"]) {
      const std::string tensor_name = t["name"];
      SCOPED_TRACE(tensor_name);
      Tensor tensor = checkpoint.tensor(tensor_name);
      EXPECT_EQ(dtype_name(tensor.dtype()), t["dtype"].get<std::string>());
      EXPECT_EQ(tensor.shape(), t["shape"].get<Shape>());
      char hash[17];
      std::snprintf(hash, sizeof hash, "%016llx",
                    static_cast<unsigned long long>(fnv1a64(tensor.byte_span())));
      EXPECT_EQ(hash, t["fnv1a64"].get<std::string>());
      std::vector<float> values = tensor.to_f32_vector();
      for (size_t i = 0; i < t["first"].size(); ++i)
        EXPECT_EQ(static_cast<double>(values[i]), t["first"][i].get<double>());
      const double sum = std::accumulate(values.begin(), values.end(), 0.0);
      EXPECT_NEAR(sum, t["sum_f64"].get<double>(), 1e-9 * (1.0 + std::fabs(sum)));
    }
  }
  EXPECT_EQ(fixtures, 6);
}

TEST(FixtureModels, ParameterCountsMatchTransformers) {
  const Json all = expectations();
  for (const auto& [name, want] : all.items()) {
    if (name.front() == '_') continue;
    SCOPED_TRACE(name);
    ModelSummary s = summarize_model(fixture_dir(name));
    EXPECT_EQ(model_type_name(s.dir.config.model_type), want["model_type"].get<std::string>());
    EXPECT_EQ(s.counts.total, want["num_parameters"].get<int64_t>());
    EXPECT_EQ(s.counts.total - s.counts.embeddings,
              want["num_parameters_exclude_embeddings"].get<int64_t>());
    EXPECT_TRUE(s.mismatch.ok()) << (s.mismatch.missing.empty() ? "" : s.mismatch.missing[0])
                                 << (s.mismatch.wrong_shape.empty() ? ""
                                                                    : s.mismatch.wrong_shape[0]);
  }
}

TEST(FixtureModels, ConfigsParseAsSaved) {
  ModelConfig llama = open_model_dir(fixture_dir("llama")).config;
  EXPECT_EQ(llama.rope.type, RopeType::kLlama3);
  EXPECT_FALSE(llama.tie_word_embeddings);
  ModelConfig mistral = open_model_dir(fixture_dir("mistral")).config;
  EXPECT_EQ(mistral.sliding_window, 16);
  EXPECT_EQ(mistral.dtype, DType::kBF16);
  ModelConfig qwen2 = open_model_dir(fixture_dir("qwen2")).config;
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_TRUE(qwen2.tie_word_embeddings);
  ModelConfig qwen3 = open_model_dir(fixture_dir("qwen3")).config;
  EXPECT_EQ(qwen3.head_dim, 32);
  EXPECT_NE(qwen3.head_dim * qwen3.num_attention_heads, qwen3.hidden_size);
}

TEST(FixtureModels, LayoutMismatchIsReported) {
  // The qwen3 checkpoint read with a config that claims three layers: layer 2 is missing.
  ModelConfig c = open_model_dir(fixture_dir("qwen3")).config;
  c.num_hidden_layers = 3;
  LayoutMismatch m = compare_with_layout(SafetensorsCheckpoint::open_dir(fixture_dir("qwen3")),
                                         parameter_layout(c));
  EXPECT_FALSE(m.ok());
  EXPECT_EQ(m.missing.front(), "model.layers.2.input_layernorm.weight");
  c.num_hidden_layers = 2;
  c.intermediate_size = 96;
  m = compare_with_layout(SafetensorsCheckpoint::open_dir(fixture_dir("qwen3")),
                          parameter_layout(c));
  EXPECT_EQ(m.wrong_shape.size(), 6u);  // gate/up/down in two layers
}

}  // namespace sft
