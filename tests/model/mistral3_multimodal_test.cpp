// A multimodal Mistral 3 folder (Mistral3ForConditionalGeneration, model_type mistral3): its
// config's text model as transformers 5.24 builds it (model/config_multimodal.cpp), and the
// text model loaded from tools/make_mistral3_multimodal_fixture.py's folder (a mistral text model
// with its own lm_head, stored as language_model.* beside a pixtral vision tower and a projector)
// against transformers at the parity tolerances of tests/model/parity_test.cpp: max|Δlogit| ≤
// 1e-4·max|logit|, |Δloss| ≤ 1e-5, per-tensor ‖Δg‖/‖g‖ ≤ 1e-4 for every text-model gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "model/model_summary.h"
#include "model/transformer.h"
#include "test_paths.h"

namespace sft::model {
namespace {

const char* const kFixture = "tests/fixtures/models/mistral3_multimodal";

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

// What save_pretrained writes: the text model's keys under text_config, tie_word_embeddings at
// both levels (Mistral3Config's true by default, MistralConfig's false), which transformers 5.24
// ties by the outer one.
TEST(Mistral3Config, ReadsTheTextModelAndTiesByTheOuterKey) {
  const ModelConfig c = parse(R"({"model_type": "mistral3", "architectures":
    ["Mistral3ForConditionalGeneration"], "dtype": "bfloat16", "tie_word_embeddings": true,
    "vision_config": {"model_type": "pixtral"}, "image_token_index": 10,
    "text_config": {"model_type": "mistral", "hidden_size": 3072, "num_hidden_layers": 26,
      "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 131072,
      "tie_word_embeddings": false, "sliding_window": null, "eos_token_id": 2}})");
  EXPECT_EQ(c.model_type, ModelType::kMistral);
  EXPECT_EQ(c.hidden_size, 3072);
  EXPECT_EQ(c.num_hidden_layers, 26);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.dtype, DType::kBF16);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2}));
  EXPECT_FALSE(c.sliding_window.has_value());
  EXPECT_EQ(c.architectures, (std::vector<std::string>{"MistralForCausalLM"}));
  EXPECT_EQ(c.final_logit_softcapping, 0.0);
  // Outer false unties whatever text_config says; with neither key the text class's default
  // (false: a transformers 4 config, whose checkpoint stores lm_head).
  EXPECT_FALSE(parse(R"({"model_type": "mistral3", "tie_word_embeddings": false,
    "text_config": {"tie_word_embeddings": true}})")
                   .tie_word_embeddings);
  EXPECT_FALSE(parse(R"({"model_type": "mistral3", "text_config": {}})").tie_word_embeddings);
}

// No text_config: Mistral3Config's own text defaults (Mistral Small 3.1's decoder); a
// text_config without model_type is a MistralConfig with MistralConfig's defaults.
TEST(Mistral3Config, TextDefaults) {
  const ModelConfig small = parse(R"({"model_type": "mistral3"})");
  EXPECT_EQ(small.model_type, ModelType::kMistral);
  EXPECT_EQ(small.hidden_size, 5120);
  EXPECT_EQ(small.intermediate_size, 32768);
  EXPECT_EQ(small.num_hidden_layers, 40);
  EXPECT_EQ(small.num_attention_heads, 32);
  EXPECT_EQ(small.num_key_value_heads, 8);
  EXPECT_EQ(small.head_dim, 128);
  EXPECT_EQ(small.vocab_size, 131072);
  EXPECT_EQ(small.max_position_embeddings, 131072);
  EXPECT_EQ(small.rms_norm_eps, 1e-5);
  EXPECT_EQ(small.rope.theta, 1e9);
  EXPECT_FALSE(small.sliding_window.has_value());
  EXPECT_FALSE(small.tie_word_embeddings);
  const ModelConfig bare = parse(R"({"model_type": "mistral3", "text_config": {}})");
  EXPECT_EQ(bare.hidden_size, 4096);  // MistralConfig's
  EXPECT_EQ(bare.sliding_window, 4096);
}

// Ministral 3 (text_config ministral3: YaRN and the query scaling by default) and Ministral
// (ministral) decoders; any other text model is refused naming text_config's key.
TEST(Mistral3Config, MinistralTextModels) {
  const ModelConfig m3 = parse(R"({"model_type": "mistral3", "text_config":
    {"model_type": "ministral3", "num_hidden_layers": 2}})");
  EXPECT_EQ(m3.model_type, ModelType::kMinistral3);
  EXPECT_EQ(m3.rope.type, RopeType::kYarn);
  EXPECT_EQ(m3.architectures, (std::vector<std::string>{"Ministral3ForCausalLM"}));
  const ModelConfig m = parse(R"({"model_type": "mistral3", "text_config":
    {"model_type": "ministral", "num_hidden_layers": 2}})");
  EXPECT_EQ(m.model_type, ModelType::kMinistral);
  EXPECT_EQ(m.architectures, (std::vector<std::string>{"MinistralForCausalLM"}));
  EXPECT_EQ(error_of(R"({"model_type": "mistral3", "text_config": {"model_type": "llama"}})"),
            "[config] config.json (text_config): key 'model_type': a "
            "Mistral3ForConditionalGeneration text model 'llama' is not supported (hint: sft "
            "reads these text models there: mistral, ministral, ministral3)");
  EXPECT_NE(error_of(R"({"model_type": "mistral3", "text_config": [1]})")
                .find("key 'text_config': expected an object"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "mistral3", "text_config": {"hidden_size": "x"}})")
                .find("config.json (text_config): key 'hidden_size'"),
            std::string::npos);
}

std::vector<int64_t> ids(const SafetensorsFile& f, const std::string& name) {
  auto v = f.tensor(name).values<int64_t>();
  return {v.begin(), v.end()};
}

TEST(Mistral3Multimodal, TextModelMatchesTransformers) {
  const std::string dir = test::source_path(kFixture);
  const SafetensorsFile expected = SafetensorsFile::open(dir + "/expected.safetensors");
  const Batch b{ids(expected, "input_ids"), ids(expected, "labels"), ids(expected, "doc_lengths")};
  Transformer m = Transformer::load(dir);
  EXPECT_EQ(m.config().model_type, ModelType::kMistral);
  EXPECT_FALSE(m.config().tie_word_embeddings);
  std::vector<float> logits(b.tokens.size() * static_cast<size_t>(m.config().vocab_size));
  const LossStats s = m.forward(b, logits.data());
  const std::vector<float> want = expected.tensor("logits").to_f32_vector();
  ASSERT_EQ(want.size(), logits.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(double(want[i]) - logits[i]));
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  EXPECT_LE(worst, 1e-4 * scale);
  const double loss = s.loss_sum / static_cast<double>(s.count);
  EXPECT_NEAR(loss, expected.tensor("loss").to_f32_vector()[0], 1e-5);

  m.backward(1.0 / static_cast<double>(s.count));
  const std::vector<NamedTensor> grads = m.gradients();
  size_t checked = 0;
  for (const NamedTensor& g : grads) {
    ASSERT_NE(expected.find("grad." + g.name), nullptr) << g.name;
    const std::vector<float> a = expected.tensor("grad." + g.name).to_f32_vector();
    const std::vector<float> got = g.tensor.to_f32_vector();
    ASSERT_EQ(a.size(), got.size()) << g.name;
    double num = 0, den = 0;
    for (size_t j = 0; j < a.size(); ++j) {
      num += (double(a[j]) - got[j]) * (double(a[j]) - got[j]);
      den += double(a[j]) * a[j];
    }
    EXPECT_LE(std::sqrt(num / std::max(den, 1e-30)), 1e-4) << g.name;
    ++checked;
  }
  EXPECT_EQ(checked, 21u);  // embed, 2 × 9 per layer, norm, lm_head: the golden's every gradient
}

// The same folder with its tensors under transformers 5's in-memory names
// (model.language_model.*, lm_head.weight, model.vision_tower.*) loads the same text model.
TEST(Mistral3Multimodal, InMemoryNamesLoad) {
  const std::string src = test::source_path(kFixture);
  const std::string dir = test::fresh_output_dir("mistral3_multimodal_memory_names");
  std::filesystem::copy_file(src + "/config.json", dir + "/config.json",
                             std::filesystem::copy_options::overwrite_existing);
  const SafetensorsFile f = SafetensorsFile::open(src + "/model.safetensors");
  std::vector<NamedTensor> renamed;
  for (const TensorEntry& e : f.entries()) {
    std::string name = e.name;
    if (name == "language_model.lm_head.weight")
      name = "lm_head.weight";
    else if (name.rfind("language_model.model.", 0) == 0)
      name = "model.language_model." + name.substr(sizeof("language_model.model.") - 1);
    else
      name = "model." + name;
    renamed.push_back({name, f.tensor(e)});
  }
  write_safetensors(dir + "/model.safetensors", renamed);
  Transformer a = Transformer::load(dir), b = Transformer::load(src);
  const std::vector<NamedTensor> pa = a.parameters(), pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].name, pb[i].name);
    EXPECT_EQ(pa[i].tensor.to_f32_vector(), pb[i].tensor.to_f32_vector()) << pa[i].name;
  }
}

// `sft inspect`'s view: the text model's layout matches, and the vision tower and projector are
// the other parts.
TEST(Mistral3Multimodal, InspectListsTheOtherParts) {
  const ModelSummary s = summarize_model(test::source_path(kFixture));
  EXPECT_TRUE(s.mismatch.ok());
  for (const std::string& name : s.other_parts)
    EXPECT_TRUE(name.rfind("vision_tower.", 0) == 0 || name.rfind("multi_modal_projector.", 0) == 0)
        << name;
  EXPECT_EQ(s.other_parts.size(), 15u);  // 4 in the projector, 11 in the one-layer tower
  EXPECT_GT(s.other_parts_elements, 0);
  EXPECT_EQ(s.stored_elements, s.counts.total + s.other_parts_elements);
}

}  // namespace
}  // namespace sft::model
