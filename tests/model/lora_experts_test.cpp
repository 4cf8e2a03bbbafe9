// LoRA on a mixture of experts' stacked weights (model/expert_lora.h) against PEFT 0.21's
// target_parameters (tools/make_lora_expert_goldens.py → tests/fixtures/lora_experts/<fixture>/),
// on the tiny qwen3_moe, gpt-oss, OLMoE, Mixtral and GraniteMoe parity fixtures, with q_proj and
// v_proj adapted beside:
//   - the fresh adapters carry PEFT's key names and shapes and its initial values bit for bit;
//   - with PEFT's non-zero adapter loaded: logits, loss and every adapter gradient within the
//     parity test's tolerances, and the merged model's logits;
//   - bf16 compute stays close to fp32 (also with the frozen base kept in bf16: the adapted
//     stacks keep their fp32 values);
//   - what PEFT refuses (dropout) and what sft does not adapt through target_parameters fails,
//     naming the flag and the closest name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "model/lora.h"
#include "model/transformer.h"
#include "test_paths.h"

namespace sft::model {
namespace {

constexpr const char* kFixtures[] = {"qwen3_moe_topk_norm", "gpt_oss_experts_sinks",
                                     "olmoe_experts", "mixtral_experts_sliding",
                                     "granitemoe_multipliers"};

std::string parity_dir(const std::string& name) {
  return test::source_path("tests/fixtures/parity/" + name);
}
std::string golden_dir(const std::string& name) {
  return test::source_path("tests/fixtures/lora_experts/" + name);
}

// The goldens' LoraConfig (make_lora_expert_goldens.py); the experts' names as the fixture's
// adapter_config.json has them (GraniteMoe's under block_sparse_moe).
LoraConfig golden_config(const std::string& name = "qwen3_moe_topk_norm") {
  LoraConfig c;
  c.r = 4;
  c.alpha = 8;
  c.dropout = 0;
  c.target_modules = {"q_proj", "v_proj"};
  const Json cfg = read_json_file(golden_dir(name) + "/adapter/adapter_config.json", "test");
  c.target_parameters = cfg.at("target_parameters").get<std::vector<std::string>>();
  return c;
}

Batch fixture_batch(const SafetensorsFile& expected) {
  auto ids = [&](const char* key) {
    const auto v = expected.tensor(key).values<int64_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  };
  return {ids("input_ids"), ids("labels"), ids("doc_lengths")};
}

// Every trainable tensor from `file` (names and shapes must agree both ways).
void load_adapter_values(Transformer& m, const SafetensorsFile& file) {
  std::set<std::string> names;
  for (const Parameter& p : m.trainable().all()) {
    names.insert(p.spec.name);
    const TensorEntry* e = file.find(p.spec.name);
    ASSERT_NE(e, nullptr) << p.spec.name;
    ASSERT_EQ(e->shape, p.spec.shape) << p.spec.name;
    const std::vector<float> v = file.tensor(p.spec.name).to_f32_vector();
    std::memcpy(p.value.data, v.data(), v.size() * sizeof(float));
  }
  for (const TensorEntry& e : file.entries()) EXPECT_TRUE(names.count(e.name)) << e.name;
  if (m.trainable().has_bf16_copies()) m.trainable().refresh_bf16_copies();
}

Transformer adapted_model(const std::string& name) {
  Transformer m = Transformer::load(parity_dir(name));
  m.enable_lora(golden_config(name), 11, "test");
  load_adapter_values(
      m, SafetensorsFile::open(golden_dir(name) + "/adapter/adapter_model.safetensors"));
  return m;
}

std::vector<float> logits_of(Transformer& m, const Batch& b, LossStats* stats = nullptr) {
  std::vector<float> out(b.tokens.size() * static_cast<size_t>(m.config().vocab_size));
  const LossStats s = m.forward(b, out.data());
  if (stats) *stats = s;
  return out;
}

// max |Δ| ≤ tol · max |ref| (the parity test's logit rule); returns max |Δ| / max |ref|.
double expect_close(const std::vector<float>& mine, const std::vector<float>& ref, double tol,
                    const std::string& what) {
  EXPECT_EQ(mine.size(), ref.size()) << what;
  double diff = 0, top = 0;
  for (size_t i = 0; i < ref.size() && i < mine.size(); ++i) {
    diff = std::max(diff, std::fabs(double(mine[i]) - ref[i]));
    top = std::max(top, std::fabs(double(ref[i])));
  }
  EXPECT_LE(diff, tol * top) << what << ": max |Δ| " << diff << ", max |ref| " << top;
  return diff / top;
}

double relative_error(const std::vector<float>& mine, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (double(mine[i]) - ref[i]) * (double(mine[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

TEST(LoraExperts, FreshAdaptersArePeftsNamesShapesAndInit) {
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    Transformer m = Transformer::load(parity_dir(name));
    const LoraModel& lora = m.enable_lora(golden_config(name), 11, "test");
    // Two layers with experts in each fixture (qwen3_moe's 0 and 2: its layer 1 is dense).
    EXPECT_EQ(lora.expert_adapters().size(), 4u);
    const SafetensorsFile init = SafetensorsFile::open(golden_dir(name) + "/init.safetensors");
    size_t seen = 0;
    for (const Parameter& p : m.trainable().all()) {
      const TensorEntry* e = init.find(p.spec.name);
      ASSERT_NE(e, nullptr) << p.spec.name;
      ASSERT_EQ(e->shape, p.spec.shape) << p.spec.name;
      const std::vector<float> want = init.tensor(p.spec.name).to_f32_vector();
      const float* have = p.value.as<float>();
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(have[i], want[i]) << p.spec.name << " " << i;
      ++seen;
    }
    EXPECT_EQ(seen, init.entries().size());
  }
}

TEST(LoraExperts, LogitsLossAndGradientsMatchPeft) {
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const SafetensorsFile expected =
        SafetensorsFile::open(golden_dir(name) + "/expected.safetensors");
    const Batch batch =
        fixture_batch(SafetensorsFile::open(parity_dir(name) + "/expected.safetensors"));
    Transformer m = adapted_model(name);
    LossStats stats;
    const std::vector<float> logits = logits_of(m, batch, &stats);
    const double dlogits =
        expect_close(logits, expected.tensor("logits").to_f32_vector(), 1e-4, "logits");
    const double loss = stats.loss_sum / static_cast<double>(stats.count);
    const double dloss = std::fabs(loss - expected.tensor("loss").to_f32_vector()[0]);
    EXPECT_LE(dloss, 1e-5) << loss;
    m.zero_grad();
    m.backward(1.0 / static_cast<double>(stats.count));
    int experts = 0;
    double worst = 0;
    for (const NamedTensor& g : m.gradients()) {
      const std::vector<float> ref = expected.tensor("grad." + g.name).to_f32_vector();
      const double rel = relative_error(g.tensor.to_f32_vector(), ref);
      EXPECT_LE(rel, 1e-4) << g.name;
      worst = std::max(worst, rel);
      experts += g.name.find("experts") != std::string::npos;
    }
    EXPECT_EQ(experts, 8);  // A and B of gate_up_proj and down_proj in two layers
    std::printf("%s vs PEFT: logits %.2e of max |logit|, loss %.2e, adapter gradients %.2e\n", name,
                dlogits, dloss, worst);
  }
}

TEST(LoraExperts, MergedModelMatchesPeftsMergeAndUnload) {
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const SafetensorsFile expected =
        SafetensorsFile::open(golden_dir(name) + "/expected.safetensors");
    const Batch batch =
        fixture_batch(SafetensorsFile::open(parity_dir(name) + "/expected.safetensors"));
    Transformer m = adapted_model(name);
    m.merge_lora();
    ASSERT_EQ(m.lora(), nullptr);
    expect_close(logits_of(m, batch), expected.tensor("merged_logits").to_f32_vector(), 1e-4,
                 "merged logits");
  }
}

// Under bf16 compute the grouped GEMMs read W' = W + delta rounded to bf16, as autocast rounds
// PEFT's parametrized fp32 weight: the same logits, bit for bit, as the merged model computed in
// bf16, and dA, dB the chain rule through that model's stack gradient dW' (in double here):
// dB[o, j·E + e] = s Σ_i dW'_e[o, i] A[e·r + j, i], dA[e·r + j, i] = s Σ_o B[o, j·E + e] dW'_e[o,
// i] (o in PEFT's order: gpt-oss's gate_up_proj alternates gate and up). Keeping the frozen base in
// bf16 only changes nothing (the adapted stacks keep their fp32 values).
TEST(LoraExperts, Bf16ReadsTheMergedWeightRoundedAndFollowsTheChainRule) {
  for (const char* name : kFixtures) {
    SCOPED_TRACE(name);
    const Batch batch =
        fixture_batch(SafetensorsFile::open(parity_dir(name) + "/expected.safetensors"));
    auto adapted = [&](bool frozen_bf16) {
      Transformer m = Transformer::load(parity_dir(name));
      m.enable_lora(golden_config(name), 11, "test");
      const SafetensorsFile f =
          SafetensorsFile::open(golden_dir(name) + "/adapter/adapter_model.safetensors");
      // The experts' adapters only: q_proj's and v_proj's keep B = 0, so they add exact zeros
      // (their own bf16 path is lora_test.cpp's) and merging leaves their weights as they are.
      for (const ExpertLoraAdapter& ad : m.lora()->expert_adapters())
        for (const Parameter* p : {ad.a, ad.b}) {
          const std::vector<float> v = f.tensor(p->spec.name).to_f32_vector();
          std::memcpy(p->value.data, v.data(), v.size() * sizeof(float));
        }
      if (frozen_bf16)
        m.keep_frozen_base_in_bf16();
      else
        m.set_compute_dtype(DType::kBF16);
      return m;
    };
    Transformer m = adapted(false);
    LossStats s;
    const std::vector<float> logits = logits_of(m, batch, &s);
    m.zero_grad();
    m.backward(1.0 / static_cast<double>(s.count));

    Transformer frozen = adapted(true);
    EXPECT_EQ(logits_of(frozen, batch), logits);

    Transformer merged = adapted(false);
    merged.set_compute_dtype(DType::kF32);
    merged.merge_lora();
    merged.set_compute_dtype(DType::kBF16);
    LossStats sm;
    EXPECT_EQ(logits_of(merged, batch, &sm), logits);
    merged.zero_grad();
    merged.backward(1.0 / static_cast<double>(sm.count));

    const double scale = 8.0 / 4.0;
    const bool interleaved = m.config().experts_on_disk == ExpertsOnDisk::kTransposedInterleaved;
    for (const ExpertLoraAdapter& ad : m.lora()->expert_adapters()) {
      const Parameter& stack = merged.params().named(ad.base->spec.name);
      const int64_t E = ad.experts, r = ad.r, I = ad.a->value.cols, O = ad.b->value.rows;
      const bool gate_up = stack.spec.slot == ParamSlot::kExpertsGateUp;
      // PEFT's output row o → sft's row of the expert block.
      auto row = [&](int64_t o) { return interleaved && gate_up ? (o % 2) * (O / 2) + o / 2 : o; };
      const float* G = stack.grad.as<float>();
      const float* A = ad.a->value.as<float>();
      const float* B = ad.b->value.as<float>();
      std::vector<float> dA(static_cast<size_t>(E * r * I)), dB(static_cast<size_t>(O * r * E));
      for (int64_t e = 0; e < E; ++e)
        for (int64_t j = 0; j < r; ++j) {
          for (int64_t o = 0; o < O; ++o) {
            double sum = 0;
            for (int64_t i = 0; i < I; ++i)
              sum += double(G[(e * O + row(o)) * I + i]) * A[(e * r + j) * I + i];
            dB[static_cast<size_t>(o * r * E + j * E + e)] = static_cast<float>(scale * sum);
          }
          for (int64_t i = 0; i < I; ++i) {
            double sum = 0;
            for (int64_t o = 0; o < O; ++o)
              sum += double(B[o * r * E + j * E + e]) * G[(e * O + row(o)) * I + i];
            dA[static_cast<size_t>((e * r + j) * I + i)] = static_cast<float>(scale * sum);
          }
        }
      const auto grad = [](const Parameter& p) {
        return std::vector<float>(p.grad.as<float>(), p.grad.as<float>() + p.grad.numel());
      };
      EXPECT_LE(relative_error(grad(*ad.a), dA), 1e-5) << ad.a->spec.name;
      EXPECT_LE(relative_error(grad(*ad.b), dB), 1e-5) << ad.b->spec.name;
    }
  }
}

std::string refusal(const LoraConfig& c, const std::string& fixture, const std::string& what) {
  Transformer m = Transformer::load(parity_dir(fixture));
  try {
    m.enable_lora(c, 1, what);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(LoraExperts, RefusesWhatPeftRefusesAndWhatIsNoExpertStack) {
  LoraConfig c = golden_config();
  c.dropout = 0.05;  // TRL's default: PEFT's ParamWrapper raises
  std::string msg = refusal(c, "qwen3_moe_topk_norm", "--lora_target_modules");
  EXPECT_NE(msg.find("--lora_target_parameters"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--lora_dropout 0"), std::string::npos) << msg;

  c = golden_config();
  c.target_parameters = {"mlp.experts.gate_proj"};
  msg = refusal(c, "qwen3_moe_topk_norm", "--lora_target_modules");
  EXPECT_NE(msg.find("'mlp.experts.gate_proj' matches no parameter"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'mlp.experts.gate_up_proj'"), std::string::npos) << msg;

  c.target_parameters = {"self_attn.q_proj.weight"};
  msg = refusal(c, "qwen3_moe_topk_norm", "adapter_config.json");
  EXPECT_NE(msg.find("adapter_config.json: target_parameters"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a stacked expert weight"), std::string::npos) << msg;

  c.target_parameters = {"gate_up_proj_bias"};  // gpt-oss's expert biases are no matrices
  msg = refusal(c, "gpt_oss_experts_sinks", "--lora_target_modules");
  EXPECT_NE(msg.find("not a stacked expert weight"), std::string::npos) << msg;

  c.target_parameters = {"mlp.experts.down_proj"};  // a dense model has no experts
  msg = refusal(c, "llama_gqa_tied_llama3", "--lora_target_modules");
  EXPECT_NE(msg.find("has no stacked expert weights"), std::string::npos) << msg;
}

TEST(LoraExperts, ParametersAloneOrWithPeftsDefaultsAndPeftsKeyForASingleStack) {
  // No target_modules: qwen3_moe has no PEFT default, so the experts alone are adapted; one
  // stack per experts module is not nested (no base_layer in its key). (PEFT's naming of the
  // nested pair is the goldens'.)
  LoraConfig c = golden_config();
  c.target_modules = {};
  c.target_parameters = {"down_proj"};
  Transformer m = Transformer::load(parity_dir("qwen3_moe_topk_norm"));
  const LoraModel& lora = m.enable_lora(c, 11, "test");
  EXPECT_TRUE(lora.targets().empty());
  EXPECT_TRUE(lora.adapters().empty());
  ASSERT_EQ(lora.expert_adapters().size(), 2u);
  EXPECT_EQ(lora.expert_adapters()[0].a->spec.name,
            "base_model.model.model.layers.0.mlp.experts.lora_A.weight");
  EXPECT_EQ(lora.expert_adapters()[1].b->spec.shape, (Shape{64, 4 * 4}));

  // Mixtral has PEFT's default targets, which join the experts.
  c.target_parameters = {"mlp.experts.gate_up_proj"};
  Transformer mixtral = Transformer::load(parity_dir("mixtral_experts_sliding"));
  const LoraModel& ml = mixtral.enable_lora(c, 11, "test");
  EXPECT_EQ(ml.targets(), (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(ml.expert_adapters().size(), 2u);
}

}  // namespace
}  // namespace sft::model
