// A QLoRA step under bf16 (the tiny Qwen3 fixture: every projection 4-bit, LoRA on all of them,
// Qwen3's q/k norms) against the same step on a dense base that holds the dequantized weights.
// The 4-bit projections write their rounded bf16 outputs themselves where that is all the
// blocks keep (Linear::writes_rounded_output: gate, up, v, and q, k before their norms); the
// dense ones write fp32 that ops::cast rounds. Both round the same fp32 sums, so the steps
// differ only where the two GEMMs sum in another order (a last-bit difference, then an
// occasional bf16 ulp), with and without gradient checkpointing's recompute.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/rng.h"
#include "model/frozen_base.h"
#include "model/model_dir.h"
#include "model/transformer.h"
#include "ops/cpu/bnb_quant.h"
#include "test_paths.h"

namespace sft::model {
namespace {

LoraConfig all_linear() {
  LoraConfig c;
  c.r = 4;
  c.alpha = 8;
  c.dropout = 0;
  c.target_modules = {"all-linear"};
  return c;
}

// LoRA with B random (so the adapters act), then bf16 compute over the frozen base.
void train_setup(Transformer& m, bool checkpointing) {
  m.enable_lora(all_linear(), 5, "test");
  Rng rng(17, 1);
  for (const LoraAdapter& a : m.lora()->adapters()) {
    float* b = a.b->value.as<float>();
    for (int64_t i = 0; i < a.b->value.numel(); ++i) b[i] = 0.1f * rng.normal();
  }
  m.keep_frozen_base_in_bf16();
  m.lora()->params().refresh_bf16_copies();
  m.set_gradient_checkpointing(checkpointing);
}

struct Step {
  double loss = 0;
  std::vector<float> grads;
};

Step step(Transformer& m) {
  Batch batch;
  for (int i = 0; i < 24; ++i) batch.tokens.push_back((i * 37 + 5) % m.config().vocab_size);
  batch.labels = batch.tokens;
  batch.doc_lengths = {14, 10};
  Step s;
  s.loss = m.forward(batch, nullptr, 1.0).loss_sum;
  m.backward(1.0);
  const auto g = m.trainable().grads();
  s.grads.assign(g.begin(), g.end());
  return s;
}

TEST(QloraBf16Step, MatchesTheDenseBaseOfTheDequantizedWeights) {
  const ModelConfig config =
      open_model_dir(test::source_path("tests/fixtures/models/qwen3")).config;
  ASSERT_TRUE(config.qk_norm);
  for (const bool checkpointing : {false, true}) {
    SCOPED_TRACE(checkpointing ? "gradient checkpointing" : "no checkpointing");
    Transformer quantized = Transformer::random_4bit(config, 7, 0.02f, Quant4Plan{});
    Transformer dense = Transformer::random(config, 7, 0.02f);
    int four_bit = 0;
    for (size_t i = 0; i < quantized.params().all().size(); ++i) {
      const Parameter& q = quantized.params().all()[i];
      if (!q.is_4bit()) continue;
      ++four_bit;
      const auto* packed = q.quant4.packed.as<uint8_t>();
      const float* absmax = q.quant4.absmax.as<float>();
      const ops::View into = dense.params().all()[i].value;
      std::vector<float> w(static_cast<size_t>(into.numel()));
      ops::cpu::dequantize_4bit({packed, packed + q.quant4.packed.numel()},
                                {absmax, absmax + q.quant4.absmax.numel()}, q.quant4.blocksize,
                                q.quant4.type, w);
      std::copy(w.begin(), w.end(), into.as<float>());
    }
    ASSERT_EQ(four_bit, 14);  // 7 projections × 2 layers
    train_setup(quantized, checkpointing);
    train_setup(dense, checkpointing);
    const Step a = step(quantized), b = step(dense);
    EXPECT_NEAR(a.loss, b.loss, 1e-5 * std::fabs(b.loss));
    ASSERT_EQ(a.grads.size(), b.grads.size());
    double diff = 0, norm = 0;
    for (size_t i = 0; i < a.grads.size(); ++i) {
      diff += (double(a.grads[i]) - b.grads[i]) * (double(a.grads[i]) - b.grads[i]);
      norm += double(b.grads[i]) * b.grads[i];
    }
    // On the AMX Xeon the two steps agree bit for bit at these shapes; a projection that read
    // an unwritten scratch instead of its rounded output moved the loss by 1e-3 and the
    // gradients by orders of magnitude.
    EXPECT_LT(std::sqrt(diff / norm), 1e-3) << "relative L2 error of the adapters' gradients";
  }
}

}  // namespace
}  // namespace sft::model
