// AdamW against torch.optim.AdamW (tools/make_optim_goldens.py).
#include "optim/adamw.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.h"
#include "io/safetensors.h"
#include "optim/clip.h"
#include "test_paths.h"

namespace sft {

namespace {

std::vector<float> values(const SafetensorsFile& file, const std::string& name) {
  return file.tensor(name).to_f32_vector();
}

std::vector<double> split_doubles(const std::string& csv) {
  std::vector<double> out;
  size_t start = 0;
  while (start < csv.size()) {
    size_t comma = csv.find(',', start);
    if (comma == std::string::npos) comma = csv.size();
    out.push_back(std::stod(csv.substr(start, comma - start)));
    start = comma + 1;
  }
  return out;
}

}  // namespace

TEST(AdamW, MatchesTorchStepByStep) {
  SafetensorsFile golden =
      SafetensorsFile::open(test::source_path("tests/fixtures/optim/adamw.safetensors"));
  const size_t split = std::stoul(golden.metadata().at("split"));
  const std::vector<double> lrs = split_doubles(golden.metadata().at("lrs"));
  std::vector<float> params = values(golden, "params0");
  const ParamSlice slices[] = {{0, split, true}, {split, params.size() - split, false}};
  AdamW adamw(params.size(), {.weight_decay = std::stod(golden.metadata().at("weight_decay"))});
  double worst = 0;
  size_t bit_identical = 0, total = 0;
  for (size_t k = 1; k <= lrs.size(); ++k) {
    const std::vector<float> grads = values(golden, "grads." + std::to_string(k));
    adamw.step(params, grads, slices, lrs[k - 1]);
    const std::vector<float> want = values(golden, "params." + std::to_string(k));
    for (size_t i = 0; i < params.size(); ++i) {
      worst = std::max(
          worst, std::fabs(double(params[i]) - want[i]) / (std::fabs(double(want[i])) + 1e-12));
      bit_identical += params[i] == want[i];
      ++total;
    }
  }
  EXPECT_EQ(adamw.steps_taken(), 5);
  EXPECT_LE(worst, 1e-6) << "worst relative error";
  // Mirroring torch's operation order should reproduce almost every value exactly.
  EXPECT_GE(double(bit_identical) / double(total), 0.99) << bit_identical << " of " << total;
  RecordProperty("bit_identical", std::to_string(bit_identical) + "/" + std::to_string(total));
}

TEST(AdamW, WeightDecaySkipsExcludedSlices) {
  std::vector<float> params = {1.0f, 1.0f};
  const std::vector<float> zero_grads = {0.0f, 0.0f};
  const ParamSlice slices[] = {{0, 1, true}, {1, 1, false}};
  AdamW adamw(2, {.weight_decay = 0.5});
  adamw.step(params, zero_grads, slices, 0.1);
  EXPECT_FLOAT_EQ(params[0], 0.95f);  // 1 × (1 − 0.1 × 0.5); zero grad moves nothing else
  EXPECT_EQ(params[1], 1.0f);
}

// The trainer folds clip_grad_norm's scaling into the update (grad_scale): the same bits as
// scaling the gradients first and stepping with them.
TEST(AdamW, ClipCoefficientInTheUpdateIsClippingFirst) {
  const size_t n = 40003;
  Rng rng(11);
  std::vector<float> params(n), grads(n);
  for (size_t i = 0; i < n; ++i) params[i] = rng.normal(), grads[i] = rng.normal();
  const ParamSlice slices[] = {{0, n / 2, true}, {n / 2, n - n / 2, false}};
  const double norm = global_grad_norm(grads);
  const float coef = clip_coefficient(norm, 1.0);
  ASSERT_LT(coef, 1.0f);
  std::vector<float> clipped = grads, p_first = params, p_folded = params;
  clip_grad_norm(clipped, 1.0);
  AdamW first(n, {.weight_decay = 0.1}), folded(n, {.weight_decay = 0.1});
  for (int step = 0; step < 2; ++step) {
    first.step(p_first, clipped, slices, 1e-3);
    folded.step(p_folded, grads, slices, 1e-3, nullptr, coef);
  }
  EXPECT_EQ(p_first, p_folded);
  EXPECT_EQ(clip_coefficient(norm, 0.0), 1.0f);  // clipping off
  EXPECT_EQ(clip_coefficient(0.5, 1.0), 1.0f);   // already below max_norm
  EXPECT_EQ(clip_coefficient(std::nan(""), 1.0), 1.0f);
}

TEST(AdamW, RejectsMismatchedSizes) {
  std::vector<float> params(3), grads(2);
  AdamW adamw(3, {});
  const ParamSlice slices[] = {{0, 3, true}};
  EXPECT_THROW(adamw.step(params, grads, slices, 1e-3), Error);
}

}  // namespace sft
