// Parity with transformers: logits, loss, every gradient and greedy generation on the fixtures
// written by tools/make_model_parity_fixtures.py (float32, random init). Tolerances are the
// acceptance of issue 5: max|Δlogit| ≤ 1e-4·max|logit|, |Δloss| ≤ 1e-5, per-tensor relative
// gradient error ‖Δg‖/‖g‖ ≤ 1e-4, greedy ids identical with and without the KV cache.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/generate.h"
#include "model/transformer.h"
#include "test_paths.h"

namespace sft::model {
namespace {

const char* const kFixtures[] = {"llama_dynamic",
                                 "llama_biases",
                                 "llama_mha_untied",
                                 "llama_gqa_tied_llama3",
                                 "mistral_sliding",
                                 "qwen2_bias_yarn",
                                 "qwen3_qknorm_linear",
                                 "smollm3_nope_sliding",
                                 "olmo2_post_norms",
                                 "granite_multipliers",
                                 "phi3_longrope_short",
                                 "phi3_longrope_long",
                                 "gemma3_sliding_softcap",
                                 "gemma2_softcaps",
                                 "ministral_layer_types",
                                 "qwen3_moe_topk_norm",
                                 "qwen3_moe_sparse_step",
                                 "olmoe_experts",
                                 "ministral3_query_scaling",
                                 "mixtral_experts_sliding",
                                 "granitemoe_multipliers",
                                 "gpt_oss_experts_sinks"};

std::string fixture_dir(const std::string& name) {
  return test::source_path("tests/fixtures/parity/" + name);
}

std::vector<int64_t> ids(const SafetensorsFile& f, const std::string& name) {
  auto v = f.tensor(name).values<int64_t>();
  return {v.begin(), v.end()};
}

Batch fixture_batch(const SafetensorsFile& f) {
  return {ids(f, "input_ids"), ids(f, "labels"), ids(f, "doc_lengths")};
}

class Parity : public ::testing::TestWithParam<const char*> {};

TEST_P(Parity, LogitsLossAndGradientsMatchTransformers) {
  const std::string dir = fixture_dir(GetParam());
  const SafetensorsFile expected = SafetensorsFile::open(dir + "/expected.safetensors");
  Transformer model = Transformer::load(dir);
  const Batch batch = fixture_batch(expected);
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t V = model.config().vocab_size;
  std::vector<float> logits(static_cast<size_t>(T * V));
  const LossStats stats = model.forward(batch, logits.data());

  const std::vector<float> ref = expected.tensor("logits").to_f32_vector();
  ASSERT_EQ(ref.size(), logits.size());
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(double(ref[i])));
    max_diff = std::max(max_diff, std::fabs(double(ref[i]) - double(logits[i])));
  }
  EXPECT_LE(max_diff, 1e-4 * max_ref) << "max |Δlogit| " << max_diff << ", max |logit| " << max_ref;

  const double loss = stats.loss_sum / static_cast<double>(stats.count);
  const double ref_loss = expected.tensor("loss").to_f32_vector()[0];
  EXPECT_LE(std::fabs(loss - ref_loss), 1e-5) << "loss " << loss << " vs " << ref_loss;

  model.zero_grad();
  model.backward(1.0f / static_cast<float>(stats.count));
  double worst = 0;
  std::string worst_name;
  for (const NamedTensor& g : model.gradients()) {
    const std::vector<float> mine = g.tensor.to_f32_vector();
    const std::vector<float> theirs = expected.tensor("grad." + g.name).to_f32_vector();
    ASSERT_EQ(mine.size(), theirs.size()) << g.name;
    double num = 0, den = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      num += (double(mine[i]) - theirs[i]) * (double(mine[i]) - theirs[i]);
      den += double(theirs[i]) * theirs[i];
    }
    const double rel = std::sqrt(num / std::max(den, 1e-30));
    EXPECT_LE(rel, 1e-4) << g.name;
    if (rel > worst) worst = rel, worst_name = g.name;
  }
  std::printf(
      "[parity] %s: max|Δlogit| %.3g (max|logit| %.3g), |Δloss| %.3g, worst grad rel %.3g (%s)\n",
      GetParam(), max_diff, max_ref, std::fabs(loss - ref_loss), worst, worst_name.c_str());
}

TEST_P(Parity, GreedyGenerationMatchesTransformers) {
  const std::string dir = fixture_dir(GetParam());
  const SafetensorsFile expected = SafetensorsFile::open(dir + "/expected.safetensors");
  Transformer model = Transformer::load(dir);
  const std::vector<int64_t> prompt = ids(expected, "gen_prompt");
  GenerateOptions opt;
  opt.max_new_tokens = 32;
  opt.eos_token_ids = model.config().eos_token_ids;
  for (bool cache : {true, false}) {
    opt.use_cache = cache;
    std::vector<int64_t> out = prompt;
    const std::vector<int64_t> generated = generate(model, prompt, opt);
    out.insert(out.end(), generated.begin(), generated.end());
    EXPECT_EQ(out, ids(expected, cache ? "gen_greedy_cache" : "gen_greedy_nocache"))
        << (cache ? "with" : "without") << " KV cache";
  }
}

// `sft inspect`'s parameter count is transformers' num_parameters: the golden holds one
// gradient per named parameter (tied weights once), so their elements add up to it.
TEST_P(Parity, ParameterCountIsTransformers) {
  const std::string dir = fixture_dir(GetParam());
  const SafetensorsFile expected = SafetensorsFile::open(dir + "/expected.safetensors");
  int64_t transformers_count = 0;
  for (const TensorEntry& e : expected.entries())
    if (e.name.rfind("grad.", 0) == 0) transformers_count += expected.tensor(e).numel();
  const Transformer model = Transformer::load(dir);
  EXPECT_EQ(count_parameters(model.layout()).total, transformers_count);
  EXPECT_EQ(model.num_parameters(), transformers_count);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Parity, ::testing::ValuesIn(kFixtures));

}  // namespace
}  // namespace sft::model
