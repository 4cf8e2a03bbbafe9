// The layer plan's options as data (model/blocks/layer_plan.h): what LayerPlan::of reads from
// a config and refuses, the HF names each norm layout gives its tensors, and — for every option
// (post norms, pre + post, (1 + w) weights, no RoPE, partial RoPE, a set score scale, the
// soft-cap, sinks) — a model whose gradients agree with central differences of its own loss
// (fp32, along a random direction per tensor), so a block that is wired wrong, or forgets a
// gradient, fails. The kernels under them have their own finite-difference tests
// (tests/ops/reference_fd_test.cpp, flash_attention_test.cpp); transformers parity for the
// families that use them comes with those families' fixtures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "io/json.h"
#include "model/blocks/layer_plan.h"
#include "model/param_layout.h"
#include "model/transformer.h"

namespace sft::model {
namespace {

ModelConfig tiny() {
  ModelConfig c;
  c.vocab_size = 40;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 64;
  c.rms_norm_eps = 1e-6;
  return c;
}

TEST(LayerPlan, DescribesEachFamilysArrangement) {
  ModelConfig c = tiny();
  c.qk_norm = true;
  EXPECT_EQ(describe(LayerPlan::of(c, 0, "t"), c.head_dim),
            "norm · attention(q/k norm, causal) · add + norm · SwiGLU MLP · add");
  ModelConfig olmo = tiny();
  olmo.pre_norms = false;
  olmo.post_norms = true;
  EXPECT_EQ(describe(LayerPlan::of(olmo, 0, "t"), olmo.head_dim),
            "attention(causal) · norm · add · SwiGLU MLP · norm · add");
  ModelConfig gemma = tiny();
  gemma.post_norms = true;
  gemma.norm_weight_offset = 1;
  gemma.attention_scale = 0.0625;
  gemma.attn_logit_softcapping = 50;
  gemma.hidden_act = "gelu_pytorch_tanh";
  EXPECT_EQ(describe(LayerPlan::of(gemma, 0, "t"), gemma.head_dim),
            "(1 + w) norm · attention(scale 0.0625, soft-cap 50, causal) · (1 + w) norm · add · "
            "(1 + w) norm · GELU-tanh MLP · (1 + w) norm · add");
  ModelConfig smol = tiny();
  smol.layer_rope = {true, false};
  EXPECT_EQ(LayerPlan::of(smol, 0, "t").rotary_dims, 8);
  EXPECT_EQ(describe(LayerPlan::of(smol, 1, "t"), smol.head_dim),
            "norm · attention(no RoPE, causal) · add + norm · SwiGLU MLP · add");
  ModelConfig phi = tiny();
  phi.rope.partial_rotary_factor = 0.75;
  phi.attention_sinks = true;
  EXPECT_EQ(describe(LayerPlan::of(phi, 0, "t"), phi.head_dim),
            "norm · attention(RoPE on 6 of 8 dims, sinks, causal) · add + norm · SwiGLU MLP · add");
}

TEST(LayerPlan, RefusesLayersNoBlockBuilds) {
  auto refused = [](ModelConfig c, const std::string& want) {
    try {
      LayerPlan::of(c, 0, "config.json");
      ADD_FAILURE() << "accepted; wanted: " << want;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
    }
  };
  ModelConfig c = tiny();
  c.pre_norms = false;
  refused(c, "pre norms, its post norms or both");
  c = tiny();
  c.rope.partial_rotary_factor = 0.3;  // 2.4 → 2 dims: fine; 0.1 → 0 dims: not
  EXPECT_EQ(LayerPlan::of(c, 0, "t").rotary_dims, 2);
  c.rope.partial_rotary_factor = 0.1;
  refused(c, "partial_rotary_factor 0.1 turns 0 of head_dim 8");
  c.rope.partial_rotary_factor = 0.625;  // 5 dims: odd
  refused(c, "an even count");
  c = tiny();
  c.attention_scale = 0;
  refused(c, "attention scale must be positive");
  c = tiny();
  c.attn_logit_softcapping = -1;
  refused(c, "attn_logit_softcapping must be positive");
  c = tiny();
  c.hidden_act = "gelu";  // exact GELU: no gated block computes it
  refused(c, "hidden_act 'gelu' is not supported");
  c.hidden_act = "gelu_pytorch_tanh";
  EXPECT_EQ(LayerPlan::of(c, 0, "t").activation, MlpActivation::kGeluTanh);
}

std::vector<std::string> layer0_names(const ModelConfig& c) {
  std::vector<std::string> out;
  for (const ParamSpec& p : parameter_layout(c))
    if (p.layer == 0) out.push_back(p.name.substr(std::string("model.layers.0.").size()));
  return out;
}

bool has(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

TEST(LayerPlan, NormLayoutsNameTheirTensorsAsTransformersDoes) {
  const std::vector<std::string> llama = layer0_names(tiny());
  EXPECT_TRUE(has(llama, "input_layernorm.weight"));
  EXPECT_TRUE(has(llama, "post_attention_layernorm.weight"));
  EXPECT_FALSE(has(llama, "pre_feedforward_layernorm.weight"));
  EXPECT_FALSE(has(llama, "post_feedforward_layernorm.weight"));

  ModelConfig g = tiny();
  g.post_norms = true;
  g.attention_sinks = true;
  const std::vector<std::string> gemma = layer0_names(g);
  for (const char* n :
       {"input_layernorm.weight", "post_attention_layernorm.weight",
        "pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight", "self_attn.sinks"})
    EXPECT_TRUE(has(gemma, n)) << n;
  EXPECT_EQ(std::count(gemma.begin(), gemma.end(), "post_attention_layernorm.weight"), 1);

  ModelConfig o = tiny();
  o.pre_norms = false;
  o.post_norms = true;
  const std::vector<std::string> olmo = layer0_names(o);
  EXPECT_TRUE(has(olmo, "post_attention_layernorm.weight"));
  EXPECT_TRUE(has(olmo, "post_feedforward_layernorm.weight"));
  EXPECT_FALSE(has(olmo, "input_layernorm.weight"));
  EXPECT_FALSE(has(olmo, "pre_feedforward_layernorm.weight"));
}

Batch batch(int64_t V) {
  Rng rng(3, 0);
  Batch b;
  b.doc_lengths = {7, 5};
  for (int i = 0; i < 12; ++i) b.tokens.push_back(static_cast<int64_t>(rng.next_u64() % V));
  b.labels = b.tokens;
  b.labels[0] = -100;
  b.labels[7] = -100;
  return b;
}

// Mean loss of the batch, and (with grads) its gradient in the model's gradient arena.
double mean_loss(Transformer& m, const Batch& b, bool grads) {
  if (grads) m.zero_grad();
  const LossStats s = m.forward(b);
  if (grads) m.backward(1.0 / static_cast<double>(s.count));
  return s.loss_sum / static_cast<double>(s.count);
}

// Every tensor's gradient along a random direction u against (L(θ + εu) − L(θ − εu)) / 2ε.
void expect_gradients_match_finite_differences(const ModelConfig& c) {
  Transformer m = Transformer::random(c, 11, 0.3f);
  // Norms that scale by 0.6 to 1.4, not by 1, so a weight applied wrongly shows (for (1 + w),
  // w itself is then near 0: a scale near 2 would make the loss too curved for the differences).
  Rng rng(5, 1);
  for (const ParamSpec& p : m.layout())
    if (p.role == ParamRole::kNorm) {
      float* w = m.param_data(p.name);
      for (int64_t i = 0; i < shape_numel(p.shape); ++i)
        w[i] = 0.6f + 0.8f * static_cast<float>(rng.uniform()) -
               static_cast<float>(c.norm_weight_offset);
    }
  const Batch b = batch(c.vocab_size);
  mean_loss(m, b, true);
  for (const ParamSpec& p : m.layout()) {
    const int64_t n = shape_numel(p.shape);
    std::vector<float> u(static_cast<size_t>(n));
    for (float& x : u) x = static_cast<float>(rng.normal());
    const float* g = m.grad_data(p.name);
    double analytic = 0;
    for (int64_t i = 0; i < n; ++i) analytic += double(g[i]) * u[static_cast<size_t>(i)];
    float* w = m.param_data(p.name);
    const std::vector<float> w0(w, w + n);
    const float eps = 2e-3f;
    auto loss_at = [&](float t) {
      for (int64_t i = 0; i < n; ++i)
        w[i] = w0[static_cast<size_t>(i)] + t * u[static_cast<size_t>(i)];
      return mean_loss(m, b, false);
    };
    const double numeric = (loss_at(eps) - loss_at(-eps)) / (2 * eps);
    for (int64_t i = 0; i < n; ++i) w[i] = w0[static_cast<size_t>(i)];
    EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::abs(numeric)) << p.name;
  }
}

TEST(LayerPlan, PreNormGradientsMatchFiniteDifferences) {  // the reference arrangement
  expect_gradients_match_finite_differences(tiny());
}

TEST(LayerPlan, PostNormGradientsMatchFiniteDifferences) {
  ModelConfig c = tiny();
  c.pre_norms = false;
  c.post_norms = true;
  c.qk_norm = true;
  expect_gradients_match_finite_differences(c);
}

TEST(LayerPlan, PreAndPostOffsetNormGradientsMatchFiniteDifferences) {
  ModelConfig c = tiny();
  c.post_norms = true;
  c.qk_norm = true;
  c.norm_weight_offset = 1;
  expect_gradients_match_finite_differences(c);
}

TEST(LayerPlan, RopeChoicesGradientsMatchFiniteDifferences) {
  ModelConfig c = tiny();
  c.layer_rope = {false, true};
  c.rope.partial_rotary_factor = 0.5;
  expect_gradients_match_finite_differences(c);
}

TEST(LayerPlan, ScoreMapAndSinksGradientsMatchFiniteDifferences) {
  ModelConfig c = tiny();
  c.attention_scale = 0.5;
  c.attn_logit_softcapping = 1.5;
  c.attention_sinks = true;
  expect_gradients_match_finite_differences(c);
}

// The options leave Llama's bits alone: a (1 + w) norm of weight w − 1 is the plain norm of w,
// and partial RoPE over all dims (factor 1) is RoPE.
void expect_offset_norm_of_shifted_weights_is_the_plain_norm(const ModelConfig& plain) {
  ModelConfig offset = plain;
  offset.norm_weight_offset = 1;
  Transformer a = Transformer::random(plain, 4, 0.3f), b = Transformer::random(offset, 4, 0.3f);
  for (const ParamSpec& p : a.layout())
    if (p.role == ParamRole::kNorm) {
      const float* wa = a.param_data(p.name);
      float* wb = b.param_data(p.name);
      for (int64_t i = 0; i < shape_numel(p.shape); ++i) wb[i] = wa[i] - 1.0f;  // 1 + (w - 1) = w
    }
  const Batch bt = batch(plain.vocab_size);
  EXPECT_EQ(mean_loss(a, bt, true), mean_loss(b, bt, true));
  for (const ParamSpec& p : a.layout()) {
    const float* ga = a.grad_data(p.name);
    const float* gb = b.grad_data(p.name);
    for (int64_t i = 0; i < shape_numel(p.shape); ++i) ASSERT_EQ(ga[i], gb[i]) << p.name;
  }
}

TEST(LayerPlan, OffsetNormOfShiftedWeightsIsThePlainNorm) {
  expect_offset_norm_of_shifted_weights_is_the_plain_norm(tiny());
  ModelConfig c = tiny();
  c.post_norms = true;
  c.qk_norm = true;
  expect_offset_norm_of_shifted_weights_is_the_plain_norm(c);
  c.pre_norms = false;
  expect_offset_norm_of_shifted_weights_is_the_plain_norm(c);
}

// Autocast rounds a q/k norm's output where the family's RMSNorm casts x̂ · w back to its (bf16)
// input's dtype: Gemma3RMSNorm and Olmo2RMSNorm do; Qwen3RMSNorm casts x̂ before its weight.
TEST(LayerPlan, QkNormOutputsRoundWhereTheNormCastsAfterItsWeight) {
  auto rounded = [](const char* type) {
    const std::string text = std::string(R"({"model_type": ")") + type + R"("})";
    const ModelConfig c = parse_model_config(parse_json_strict(text, "test", "config.json"), "t");
    return LayerPlan::of(c, 0, "t").qk_norm_output_rounded;
  };
  EXPECT_TRUE(rounded("gemma3_text"));
  EXPECT_TRUE(rounded("olmo2"));
  EXPECT_FALSE(rounded("qwen3"));
  EXPECT_FALSE(rounded("gemma2"));  // no q/k norms
  EXPECT_FALSE(rounded("llama"));
}

TEST(LayerPlan, BfloatComputeRunsEveryOption) {
  ModelConfig c = tiny();
  c.post_norms = true;
  c.norm_weight_offset = 1;
  c.attention_scale = 0.5;
  c.attn_logit_softcapping = 1.5;
  c.attention_sinks = true;
  c.layer_rope = {false, true};
  Transformer f32 = Transformer::random(c, 8, 0.3f), bf16 = Transformer::random(c, 8, 0.3f);
  bf16.set_compute_dtype(DType::kBF16);
  const Batch b = batch(c.vocab_size);
  const double want = mean_loss(f32, b, true), got = mean_loss(bf16, b, true);
  EXPECT_NEAR(got, want, 2e-2 * std::abs(want));
  for (const ParamSpec& p : f32.layout()) {
    const float* g32 = f32.grad_data(p.name);
    const float* g16 = bf16.grad_data(p.name);
    double num = 0, den = 0;
    for (int64_t i = 0; i < shape_numel(p.shape); ++i) {
      num += (double(g16[i]) - g32[i]) * (double(g16[i]) - g32[i]);
      den += double(g32[i]) * g32[i];
    }
    EXPECT_LE(std::sqrt(num / std::max(den, 1e-30)), 0.1) << p.name;
  }
}

}  // namespace
}  // namespace sft::model
