// bf16 compute against transformers under CPU bf16 autocast (goldens written by
// tools/make_bf16_parity_goldens.py on the parity fixtures), with bf16 tolerances. Both sides
// round the same tensors to bf16 (projection inputs and outputs, and where the family's norm
// returns its bf16 input's dtype, the q/k norms' outputs: LayerPlan::qk_norm_output_rounded), but
// not all at the same points (we apply RoPE, the norms and SwiGLU in fp32 to the rounded values;
// autocast runs the activation in bf16; eager attention rounds its scores to bf16, ours keeps them
// fp32), so they differ by independent bf16 roundings, not by formula. Hence two checks on the
// logits:
//   - accuracy: our max|Δ| from the fp32 logits (the spec) is no worse than 1.25× autocast's
//     (measured: ours 0.03–0.22, autocast 0.03–0.20);
//   - agreement: within 3e-2 of autocast, relative to the LM head's largest output: max|logit|,
//     or for soft-capped logits (Gemma) the largest output before the cap, cap · atanh(max|logit|
//     / cap): the cap squeezes the large logits toward ±cap, not the error of the others (tanh'
//     is 1 near 0), so max|logit| would understate the scale the errors have (measured:
//     0.03–0.21 against bounds 0.11–0.38);
// and the loss within 5e-3 relative. Gradients are checked against our own fp32 gradients
// (autocast's are bf16 roundings of the same): per-tensor relative error ≤ 5e-2, or 1.25×
// autocast's own worst distance from its fp32 gradients where that is larger (the golden's
// grad_rel_worst: 1.7–5.7% for most fixtures, 7.2% and 7.4% for the Gemma ones, whose
// random weights amplify every rounding about 5× from the first projection to the logits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/transformer.h"
#include "test_paths.h"

namespace sft::model {
namespace {

const char* const kFixtures[] = {"llama_dynamic",          "llama_biases",
                                 "llama_mha_untied",       "llama_gqa_tied_llama3",
                                 "mistral_sliding",        "qwen2_bias_yarn",
                                 "qwen3_qknorm_linear",    "smollm3_nope_sliding",
                                 "olmo2_post_norms",       "granite_multipliers",
                                 "phi3_longrope_short",    "phi3_longrope_long",
                                 "ministral_layer_types",  "ministral3_query_scaling",
                                 "gemma3_sliding_softcap", "gemma2_softcaps"};

// The LM head's largest output: max|logit|, undone through the soft-cap when there is one.
double head_output_scale(double max_logit, double softcap) {
  if (softcap == 0) return max_logit;
  return softcap * std::atanh(std::min(max_logit / softcap, 1.0 - 1e-6));
}

std::vector<int64_t> ids(const SafetensorsFile& f, const std::string& name) {
  auto v = f.tensor(name).values<int64_t>();
  return {v.begin(), v.end()};
}

class Bf16Parity : public ::testing::TestWithParam<const char*> {};

TEST_P(Bf16Parity, LogitsAndLossMatchTransformersAutocast) {
  const std::string dir = test::source_path(std::string("tests/fixtures/parity/") + GetParam());
  const SafetensorsFile batch_file = SafetensorsFile::open(dir + "/expected.safetensors");
  const SafetensorsFile expected = SafetensorsFile::open(dir + "/expected_bf16.safetensors");
  const Batch batch{ids(batch_file, "input_ids"), ids(batch_file, "labels"),
                    ids(batch_file, "doc_lengths")};
  Transformer model = Transformer::load(dir);
  model.set_compute_dtype(DType::kBF16);
  std::vector<float> logits(batch.tokens.size() * static_cast<size_t>(model.config().vocab_size));
  const LossStats stats = model.forward(batch, logits.data());

  const std::vector<float> ref = expected.tensor("logits").to_f32_vector();
  ASSERT_EQ(ref.size(), logits.size());
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(double(ref[i])));
    max_diff = std::max(max_diff, std::fabs(double(ref[i]) - double(logits[i])));
  }
  const std::vector<float> fp32 = batch_file.tensor("logits").to_f32_vector();
  double ours_fp32 = 0, ac_fp32 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    ours_fp32 = std::max(ours_fp32, std::fabs(double(fp32[i]) - double(logits[i])));
    ac_fp32 = std::max(ac_fp32, std::fabs(double(fp32[i]) - double(ref[i])));
  }
  const double loss = stats.loss_sum / static_cast<double>(stats.count);
  const double ref_loss = expected.tensor("loss").to_f32_vector()[0];
  const double scale = head_output_scale(max_ref, model.config().final_logit_softcapping);
  std::printf(
      "[bf16] %s: max|Δlogit| %.3g vs autocast (head output scale %.3g); from fp32: ours %.3g, "
      "autocast %.3g; loss %.6f vs %.6f\n",
      GetParam(), max_diff, scale, ours_fp32, ac_fp32, loss, ref_loss);
  EXPECT_LE(ours_fp32, 1.25 * ac_fp32);
  EXPECT_LE(max_diff, 3e-2 * scale);
  EXPECT_LE(std::fabs(loss - ref_loss), 5e-3 * std::fabs(ref_loss));
}

TEST_P(Bf16Parity, GradientsTrackFp32) {
  const std::string dir = test::source_path(std::string("tests/fixtures/parity/") + GetParam());
  const SafetensorsFile batch_file = SafetensorsFile::open(dir + "/expected.safetensors");
  const Batch batch{ids(batch_file, "input_ids"), ids(batch_file, "labels"),
                    ids(batch_file, "doc_lengths")};
  Transformer fp32 = Transformer::load(dir), bf16 = Transformer::load(dir);
  bf16.set_compute_dtype(DType::kBF16);
  for (Transformer* m : {&fp32, &bf16}) {
    const LossStats s = m->forward(batch, nullptr, 1.0 / 32);
    ASSERT_GT(s.count, 0);
    m->backward(1.0 / 32);
  }
  const std::vector<NamedTensor> want = fp32.gradients(), got = bf16.gradients();
  ASSERT_EQ(want.size(), got.size());
  const SafetensorsFile expected = SafetensorsFile::open(dir + "/expected_bf16.safetensors");
  const double autocast_worst = expected.tensor("grad_rel_worst").to_f32_vector()[0];
  const double bound = std::max(5e-2, 1.25 * autocast_worst);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::vector<float> a = want[i].tensor.to_f32_vector(), b = got[i].tensor.to_f32_vector();
    double num = 0, den = 0;
    for (size_t j = 0; j < a.size(); ++j) {
      num += (double(a[j]) - b[j]) * (double(a[j]) - b[j]);
      den += double(a[j]) * a[j];
    }
    const double rel = std::sqrt(num / std::max(den, 1e-30));
    worst = std::max(worst, rel);
    EXPECT_LE(rel, bound) << want[i].name;
  }
  std::printf("[bf16] %s: worst gradient %.4f from fp32 (bound %.4f; autocast's own %.4f)\n",
              GetParam(), worst, bound, autocast_worst);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Bf16Parity, ::testing::ValuesIn(kFixtures));

}  // namespace
}  // namespace sft::model
