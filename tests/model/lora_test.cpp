// LoRA inside Linear (model/lora.h), checked against independent computations:
//   - a fresh adapter (B = 0) leaves the logits bit-identical to the base model, A is drawn
//     from U(±1/sqrt(I)) as PEFT's kaiming_uniform(a = sqrt(5)), the same seed gives the same A;
//   - the adapter gradients equal the chain rule through the merged model's full-weight
//     gradient G of W' = W + s·B·A: dB = s·G·Aᵀ, dA = s·Bᵀ·G (the full fine-tuning backward is
//     verified against transformers elsewhere), and the frozen base gets no gradient arena;
//   - merged logits equal the adapted model's; rsLoRA scales by alpha / sqrt(r);
//   - the chain rule, merge, dropout and bf16 checks run on Phi-3's fused layout too (one
//     adapter on qkv_proj / gate_up_proj, its parts adding their rows of B);
//   - dropout masks are a pure function of the key (same key, same loss; another key, another
//     loss), and forward and backward use the same mask (finite differences);
//   - bf16 compute with adapters stays close to fp32, and is bit for bit the same when the
//     frozen base keeps only its bf16 matrices (keep_frozen_base_in_bf16);
//   - bad configurations fail naming the problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "model/lora.h"
#include "model/transformer.h"

namespace sft::model {
namespace {

ModelConfig tiny_config() {
  ModelConfig c;
  c.model_type = ModelType::kQwen3;
  c.vocab_size = 50;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.qk_norm = true;
  c.max_position_embeddings = 64;
  c.tie_word_embeddings = true;
  return c;
}

// Phi-3's layout: qkv_proj and gate_up_proj fused, one adapter each (their parts add their rows
// of its B).
ModelConfig tiny_phi3_config() {
  ModelConfig c = tiny_config();
  c.model_type = ModelType::kPhi3;
  c.qk_norm = false;
  c.fused_projections = true;
  return c;
}

Batch tiny_batch() {
  Batch b;
  for (int i = 0; i < 20; ++i) b.tokens.push_back((i * 7 + 3) % 50);
  b.labels = b.tokens;
  b.doc_lengths = {12, 8};
  return b;
}

LoraConfig all_linear(int64_t r = 4, double alpha = 8, double dropout = 0) {
  LoraConfig c;
  c.r = r;
  c.alpha = alpha;
  c.dropout = dropout;
  c.target_modules = {"all-linear"};
  return c;
}

// Gives every B random values so the adapters change the output.
void randomize_b(Transformer& m, uint64_t seed) {
  Rng rng(seed, 1);
  for (const LoraAdapter& a : m.lora()->adapters()) {
    float* b = a.b->value.as<float>();
    for (int64_t i = 0; i < a.b->value.numel(); ++i) b[i] = 0.1f * rng.normal();
  }
}

std::vector<float> logits_of(Transformer& m, const Batch& b) {
  std::vector<float> out(b.tokens.size() * static_cast<size_t>(m.config().vocab_size));
  m.forward(b, out.data());
  return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

TEST(Lora, FreshAdapterLeavesTheModelUnchangedAndIsPeftInitialised) {
  const Batch batch = tiny_batch();
  Transformer base = Transformer::random(tiny_config(), 1);
  const std::vector<float> want = logits_of(base, batch);
  Transformer m = Transformer::random(tiny_config(), 1);
  LoraModel& lora = m.enable_lora(all_linear(), 42, "test");
  EXPECT_EQ(lora.adapters().size(), 14u);
  EXPECT_EQ(logits_of(m, batch), want);  // B = 0: bit for bit
  for (const LoraAdapter& a : lora.adapters()) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(a.a->value.cols));
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < a.a->value.numel(); ++i) {
      lo = std::min(lo, a.a->value.as<float>()[i]);
      hi = std::max(hi, a.a->value.as<float>()[i]);
    }
    EXPECT_LE(hi, bound);
    EXPECT_GE(lo, -bound);
    EXPECT_GT(hi - lo, bound);  // spread over the interval, not a constant
    for (int64_t i = 0; i < a.b->value.numel(); ++i) ASSERT_EQ(a.b->value.as<float>()[i], 0.0f);
  }
  Transformer again = Transformer::random(tiny_config(), 1);
  again.enable_lora(all_linear(), 42, "test");
  const auto av = again.trainable().values();
  const auto mv = m.trainable().values();
  EXPECT_TRUE(std::equal(av.begin(), av.end(), mv.begin()));
  EXPECT_EQ(m.trainable().numel(),
            2 * 4 * ((32 + 32) + (32 + 16) * 2 + (32 + 32) + (32 + 48) * 2 + (48 + 32)));
}

void expect_chain_rule_through_merged_weight(const ModelConfig& config);
void expect_dropout_keyed_and_shared(const ModelConfig& config, size_t index);
void expect_bf16_tracks_fp32(const ModelConfig& config);

TEST(Lora, GradientsFollowTheChainRuleThroughTheMergedWeight) {
  for (const ModelConfig& config : {tiny_config(), tiny_phi3_config()})
    expect_chain_rule_through_merged_weight(config);
}

TEST(Lora, MergedModelGivesTheSameLogitsAndRsloraScales) {
  const Batch batch = tiny_batch();
  for (const ModelConfig& config : {tiny_config(), tiny_phi3_config()})
    for (bool rslora : {false, true}) {
      LoraConfig c = all_linear(4, 8);
      c.use_rslora = rslora;
      EXPECT_DOUBLE_EQ(lora_scale(c), rslora ? 4.0 : 2.0);
      Transformer m = Transformer::random(config, 3);
      m.enable_lora(c, 5, "test");
      EXPECT_EQ(m.lora()->adapters().size(), config.fused_projections ? 8u : 14u);
      randomize_b(m, 11);
      const std::vector<float> adapted = logits_of(m, batch);
      m.merge_lora();
      EXPECT_EQ(m.lora(), nullptr);
      EXPECT_LT(max_abs_diff(logits_of(m, batch), adapted), 1e-5);
    }
}

void expect_chain_rule_through_merged_weight(const ModelConfig& config) {
  SCOPED_TRACE(model_type_name(config.model_type));
  const Batch batch = tiny_batch();
  Transformer m = Transformer::random(config, 3);
  m.enable_lora(all_linear(4, 8), 5, "test");
  randomize_b(m, 9);
  const LossStats s = m.forward(batch, nullptr, 1.0);
  m.backward(1.0);
  EXPECT_FALSE(m.params().has_grads());  // the frozen base has no gradient arena

  Transformer merged = Transformer::random(config, 3);
  merged.enable_lora(all_linear(4, 8), 5, "test");
  randomize_b(merged, 9);
  merged.merge_lora();
  const LossStats s2 = merged.forward(batch, nullptr, 1.0);
  merged.backward(1.0);
  EXPECT_NEAR(s.loss_sum, s2.loss_sum, 1e-4 * std::fabs(s.loss_sum));

  const LoraModel& lora = *m.lora();
  const double scale = 8.0 / 4.0;
  double worst = 0;
  for (size_t i = 0; i < lora.adapters().size(); ++i) {
    const LoraAdapter& ad = lora.adapters()[i];
    const Parameter& g = merged.params().named(lora.adapted_weights()[i]->spec.name);
    const int64_t O = g.value.rows, I = g.value.cols, r = ad.a->value.rows;
    const float* G = g.grad.as<float>();
    const float* A = ad.a->value.as<float>();
    const float* B = ad.b->value.as<float>();
    double norm = 0, err = 0;
    for (int64_t o = 0; o < O; ++o)
      for (int64_t k = 0; k < r; ++k) {  // dB[o, k] = s Σ_i G[o, i] A[k, i]
        double want = 0;
        for (int64_t c = 0; c < I; ++c) want += double(G[o * I + c]) * A[k * I + c];
        want *= scale;
        norm = std::max(norm, std::fabs(want));
        err = std::max(err, std::fabs(want - ad.b->grad.as<float>()[o * r + k]));
      }
    for (int64_t k = 0; k < r; ++k)
      for (int64_t c = 0; c < I; ++c) {  // dA[k, i] = s Σ_o B[o, k] G[o, i]
        double want = 0;
        for (int64_t o = 0; o < O; ++o) want += double(B[o * r + k]) * G[o * I + c];
        want *= scale;
        norm = std::max(norm, std::fabs(want));
        err = std::max(err, std::fabs(want - ad.a->grad.as<float>()[k * I + c]));
      }
    ASSERT_GT(norm, 0);
    worst = std::max(worst, err / norm);
  }
  EXPECT_LT(worst, 1e-4);
}

TEST(Lora, DropoutMasksAreKeyedAndSharedByForwardAndBackward) {
  // Layer 0's o_proj; on Phi-3 its qkv_proj, whose q, k, v parts share the one mask and A.
  for (const auto& [config, index] : {std::pair{tiny_config(), 3}, {tiny_phi3_config(), 1}})
    expect_dropout_keyed_and_shared(config, static_cast<size_t>(index));
}

TEST(Lora, Bf16ComputeTracksFp32) {
  for (const ModelConfig& config : {tiny_config(), tiny_phi3_config()})
    expect_bf16_tracks_fp32(config);
}

void expect_dropout_keyed_and_shared(const ModelConfig& config, size_t index) {
  SCOPED_TRACE(model_type_name(config.model_type));
  const Batch batch = tiny_batch();
  Transformer m = Transformer::random(config, 3);
  m.enable_lora(all_linear(4, 8, 0.3), 5, "test");
  randomize_b(m, 13);
  auto loss = [&](uint64_t key) {
    m.set_lora_dropout_key(key);
    const LossStats s = m.forward(batch, nullptr, 1.0);
    return s.loss_sum;
  };
  const double l1 = loss(1);
  EXPECT_EQ(loss(1), l1);
  EXPECT_NE(loss(2), l1);
  // Evaluation (no loss scale): no dropout, so no key dependence.
  m.set_lora_dropout_key(1);
  const double e1 = m.forward(batch).loss_sum;
  m.set_lora_dropout_key(2);
  EXPECT_EQ(m.forward(batch).loss_sum, e1);

  // d loss / d A[0] of adapter 0 against central differences under the same mask.
  m.zero_grad();
  m.set_lora_dropout_key(7);
  m.forward(batch, nullptr, 1.0);
  m.backward(1.0);
  const LoraAdapter& ad = m.lora()->adapters()[index];
  float* a0 = ad.a->value.as<float>();
  const double analytic = ad.a->grad.as<float>()[0];
  const float h = 1e-2f, keep = a0[0];
  a0[0] = keep + h;
  const double up = loss(7);
  a0[0] = keep - h;
  const double down = loss(7);
  a0[0] = keep;
  const double numeric = (up - down) / (2 * h);
  EXPECT_NEAR(analytic, numeric, 2e-2 * std::fabs(numeric) + 1e-4);
}

void expect_bf16_tracks_fp32(const ModelConfig& config) {
  SCOPED_TRACE(model_type_name(config.model_type));
  const Batch batch = tiny_batch();
  Transformer f32 = Transformer::random(config, 3);
  f32.enable_lora(all_linear(), 5, "test");
  randomize_b(f32, 17);
  const double want = f32.forward(batch, nullptr, 1.0).loss_sum;
  f32.backward(1.0);
  Transformer b16 = Transformer::random(config, 3);
  b16.enable_lora(all_linear(), 5, "test");
  randomize_b(b16, 17);
  b16.set_compute_dtype(DType::kBF16);
  const double got = b16.forward(batch, nullptr, 1.0).loss_sum;
  b16.backward(1.0);
  EXPECT_NEAR(got, want, 1e-2 * std::fabs(want));
  const auto g32 = f32.trainable().grads();
  const auto g16 = b16.trainable().grads();
  double n = 0, d = 0;
  for (size_t i = 0; i < g32.size(); ++i) {
    n += double(g32[i]) * g32[i];
    d += (double(g32[i]) - g16[i]) * (double(g32[i]) - g16[i]);
  }
  EXPECT_LT(std::sqrt(d / n), 5e-2);
}

TEST(Lora, FrozenBaseInBf16OnlyComputesBitForBitTheSame) {
  const Batch batch = tiny_batch();
  for (const bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied embeddings" : "untied LM head");
    ModelConfig config = tiny_config();
    config.tie_word_embeddings = tied;
    // bf16_only releases after its copies were made; direct makes them while releasing.
    Transformer both = Transformer::random(config, 3), bf16_only = Transformer::random(config, 3),
                direct = Transformer::random(config, 3);
    for (Transformer* m : {&both, &bf16_only, &direct}) {
      m->enable_lora(all_linear(), 5, "test");
      randomize_b(*m, 17);
    }
    both.set_compute_dtype(DType::kBF16);
    bf16_only.set_compute_dtype(DType::kBF16);
    bf16_only.keep_frozen_base_in_bf16();
    direct.keep_frozen_base_in_bf16();
    EXPECT_EQ(direct.compute_dtype(), DType::kBF16);
    EXPECT_TRUE(bf16_only.params().at(ParamSlot::kQ, 0).value.empty());
    const ops::View kept = bf16_only.params().at(ParamSlot::kEmbed).value;
    ASSERT_FALSE(kept.empty());  // looked up in fp32, and released in place: the same values
    const ops::View original = both.params().at(ParamSlot::kEmbed).value;
    EXPECT_TRUE(
        std::equal(kept.as<float>(), kept.as<float>() + kept.numel(), original.as<float>()));
    // An untied embedding is never a matmul operand, so it has no bf16 copy to keep.
    EXPECT_EQ(bf16_only.params().at(ParamSlot::kEmbed).bf16.empty(), !tied);
    for (Transformer* m : {&both, &bf16_only, &direct}) {
      m->forward(batch, nullptr, 1.0);
      m->backward(1.0);
    }
    const auto a = both.trainable().grads();
    for (Transformer* m : {&bf16_only, &direct}) {
      const auto b = m->trainable().grads();
      ASSERT_EQ(a.size(), b.size());
      EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin()));
      EXPECT_EQ(logits_of(both, batch), logits_of(*m, batch));
      EXPECT_THROW(m->parameters(), Error);
      EXPECT_THROW(m->set_compute_dtype(DType::kF32), Error);
    }
  }
}

TEST(Lora, DefaultTargetsAndModulesToSave) {
  Transformer m = Transformer::random(tiny_config(), 3);
  LoraConfig c;
  c.r = 2;
  c.modules_to_save = {"norm"};
  LoraModel& lora = m.enable_lora(c, 1, "test");
  EXPECT_EQ(lora.targets(), (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(lora.adapters().size(), 4u);
  // PEFT's plain suffix rule: every *norm module (2 layers × 4, and model.norm).
  EXPECT_EQ(lora.saved().size(), 9u);
  EXPECT_EQ(m.trainable().named("base_model.model.model.norm.weight").value.numel(), 32);
}

TEST(Lora, BadConfigurationsNameTheProblem) {
  auto message = [](LoraConfig c) {
    Transformer m = Transformer::random(tiny_config(), 3);
    try {
      m.enable_lora(c, 1, "--lora_target_modules");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  LoraConfig zero = all_linear(0);
  EXPECT_NE(message(zero).find("rank r = 0 must be positive"), std::string::npos);
  LoraConfig unknown = all_linear();
  unknown.target_modules = {"q_proj", "lm_head"};
  EXPECT_NE(message(unknown).find("'lm_head' is not a projection"), std::string::npos);
  LoraConfig tied = all_linear();
  tied.modules_to_save = {"embed_tokens"};
  EXPECT_NE(message(tied).find("ties to the LM head"), std::string::npos);
}

}  // namespace
}  // namespace sft::model
