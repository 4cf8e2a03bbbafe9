// Mixture of experts at the model level (qwen3_moe): the config's expert keys and which layers
// have experts (transformers' rule), the config written back and read again, the layer plan,
// and the experts' checkpoint form: the fixture's per-expert tensors (as save_pretrained writes
// them) read into the stacks, written back per expert by save(), and read again unchanged.
// Numerics against transformers are parity_test.cpp's (fixtures qwen3_moe_*).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "model/blocks/layer_plan.h"
#include "model/config.h"
#include "model/lora.h"
#include "model/transformer.h"
#include "test_paths.h"

namespace sft::model {
namespace {

std::string fixture(const std::string& name) {
  return test::source_path("tests/fixtures/parity/" + name);
}

TEST(MoeConfig, ReadsTheExpertKeysAndTheSparseLayers) {
  const ModelConfig c = load_model_config(fixture("qwen3_moe_topk_norm") + "/config.json");
  EXPECT_EQ(c.model_type, ModelType::kQwen3Moe);
  EXPECT_EQ(c.num_experts, 4);  // saved as num_local_experts by transformers 5
  EXPECT_EQ(c.num_experts_per_tok, 2);
  EXPECT_EQ(c.moe_intermediate_size, 32);
  EXPECT_TRUE(c.norm_topk_prob);
  EXPECT_EQ(c.layer_moe, (std::vector<bool>{true, false, true}));  // mlp_only_layers [1]
  EXPECT_DOUBLE_EQ(c.router_aux_loss_coef, 0.001);
  const ModelConfig s = load_model_config(fixture("qwen3_moe_sparse_step") + "/config.json");
  EXPECT_EQ(s.layer_moe, (std::vector<bool>{false, true}));  // decoder_sparse_step 2

  const ModelConfig back = parse_model_config(model_config_to_json(c), "written");
  EXPECT_EQ(back.num_experts, c.num_experts);
  EXPECT_EQ(back.num_experts_per_tok, c.num_experts_per_tok);
  EXPECT_EQ(back.moe_intermediate_size, c.moe_intermediate_size);
  EXPECT_EQ(back.norm_topk_prob, c.norm_topk_prob);
  EXPECT_EQ(back.layer_moe, c.layer_moe);
  EXPECT_EQ(back.mlp_only_layers, c.mlp_only_layers);

  Json bad = model_config_to_json(c);
  bad["num_experts_per_tok"] = 5;
  EXPECT_THROW(parse_model_config(bad, "bad"), Error);
  bad = model_config_to_json(c);
  bad["mlp_only_layers"] = Json::array({7});
  EXPECT_THROW(parse_model_config(bad, "bad"), Error);
}

TEST(MoeConfig, LayerPlanNamesTheExperts) {
  const ModelConfig c = load_model_config(fixture("qwen3_moe_topk_norm") + "/config.json");
  EXPECT_TRUE(LayerPlan::of(c, 0, "t").experts);
  EXPECT_FALSE(LayerPlan::of(c, 1, "t").experts);
  EXPECT_NE(describe(LayerPlan::of(c, 0, "t"), c.head_dim).find("experts"), std::string::npos);
}

TEST(MoeCheckpoint, PerExpertTensorsRoundTrip) {
  const std::string dir = fixture("qwen3_moe_topk_norm");
  const Transformer m = Transformer::load(dir);
  // The stacked gate_up of layer 0 holds expert 1's up_proj at rows [2I + I, 4I).
  const SafetensorsFile disk = SafetensorsFile::open(dir + "/model.safetensors");
  const std::vector<float> up1 =
      disk.tensor("model.layers.0.mlp.experts.1.up_proj.weight").to_f32_vector();
  const Parameter& gu = m.params().named("model.layers.0.mlp.experts.gate_up_proj");
  const int64_t I = 32, C = 64;
  ASSERT_EQ(gu.spec.shape, (Shape{4, 2 * I, C}));
  for (int64_t i = 0; i < I * C; ++i)
    ASSERT_EQ(gu.value.as<float>()[(2 * I + I) * C + i], up1[static_cast<size_t>(i)]) << i;

  // save() writes the experts one by one under transformers' names; loading that gives the
  // same parameters.
  const std::string out = (std::filesystem::temp_directory_path() / "sft_moe_roundtrip").string();
  std::filesystem::remove_all(out);
  std::filesystem::create_directories(out);
  std::filesystem::copy_file(dir + "/config.json", out + "/config.json");
  m.save(out, DType::kF32);
  const SafetensorsCheckpoint saved = SafetensorsCheckpoint::open_dir(out);
  EXPECT_TRUE(saved.contains("model.layers.2.mlp.experts.3.down_proj.weight"));
  EXPECT_FALSE(saved.contains("model.layers.0.mlp.experts.gate_up_proj"));
  EXPECT_FALSE(saved.contains("model.layers.1.mlp.experts.0.gate_proj.weight"));  // dense layer
  const Transformer again = Transformer::load(out);
  const std::span<const float> a = m.params().values(), b = again.params().values();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin()));
  std::filesystem::remove_all(out);
}

// The load-balancing loss against transformers' load_balancing_loss_func on the fixture's
// packed batch (aux_loss), and its gradient alone (aux_grad.*: backward with the cross-entropy's
// scale 0 and the loss's weight 1), within the parity test's tolerances.
TEST(MoeAuxLoss, ValueAndGradientMatchTransformers) {
  for (const char* name :
       {"qwen3_moe_topk_norm", "qwen3_moe_sparse_step", "olmoe_experts", "mixtral_experts_sliding",
        "granitemoe_multipliers", "gpt_oss_experts_sinks"}) {
    SCOPED_TRACE(name);
    const std::string dir = fixture(name);
    const SafetensorsFile expected = SafetensorsFile::open(dir + "/expected.safetensors");
    Transformer model = Transformer::load(dir);
    auto ids = [&](const char* key) {
      const auto v = expected.tensor(key).values<int64_t>();
      return std::vector<int64_t>(v.begin(), v.end());
    };
    const Batch batch{ids("input_ids"), ids("labels"), ids("doc_lengths")};
    model.set_router_aux_loss_weight(1.0);
    model.forward(batch);
    const double ref = expected.tensor("aux_loss").to_f32_vector()[0];
    EXPECT_LE(std::fabs(model.router_aux_loss() - ref), 1e-5 * ref)
        << model.router_aux_loss() << " vs " << ref;
    model.zero_grad();
    model.backward(0.0);
    int checked = 0;
    for (const NamedTensor& g : model.gradients()) {
      if (!expected.find("aux_grad." + g.name)) continue;
      const std::vector<float> mine = g.tensor.to_f32_vector();
      const std::vector<float> theirs = expected.tensor("aux_grad." + g.name).to_f32_vector();
      ASSERT_EQ(mine.size(), theirs.size()) << g.name;
      double num = 0, den = 0;
      for (size_t i = 0; i < mine.size(); ++i) {
        num += (double(mine[i]) - theirs[i]) * (double(mine[i]) - theirs[i]);
        den += double(theirs[i]) * theirs[i];
      }
      if (den == 0) {
        EXPECT_EQ(num, 0) << g.name;
        continue;
      }
      EXPECT_LE(std::sqrt(num / den), 1e-4) << g.name;
      ++checked;
    }
    EXPECT_GT(checked, 5);
  }
}

// LoRA on a mixture of experts adapts what PEFT finds as nn.Linear there: the attention
// projections and a dense layer's MLP (the experts are stacked parameters, the router no
// nn.Linear). Fresh adapters (B = 0) leave the logits as they were, and the adapters get
// gradients while the frozen experts get none.
TEST(MoeLora, AttentionAdaptersOnAMixtureOfExperts) {
  const std::string dir = fixture("qwen3_moe_topk_norm");
  const SafetensorsFile expected = SafetensorsFile::open(dir + "/expected.safetensors");
  auto ids = [&](const char* key) {
    const auto v = expected.tensor(key).values<int64_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  };
  const Batch batch{ids("input_ids"), ids("labels"), ids("doc_lengths")};
  Transformer model = Transformer::load(dir);
  const int64_t T = static_cast<int64_t>(batch.tokens.size()), V = model.config().vocab_size;
  std::vector<float> base(static_cast<size_t>(T * V)), adapted(base.size());
  model.forward(batch, base.data());
  LoraConfig lc;
  lc.r = 4;
  lc.dropout = 0;
  lc.target_modules = {"q_proj", "v_proj", "gate_proj"};
  model.enable_lora(lc, 7, "test");
  const LossStats stats = model.forward(batch, adapted.data());
  EXPECT_EQ(base, adapted);
  model.zero_grad();
  model.backward(1.0 / static_cast<double>(stats.count));
  int adapters = 0;
  for (const NamedTensor& g : model.gradients()) {
    EXPECT_EQ(g.name.find("experts"), std::string::npos) << g.name;
    if (g.name.find("lora_A") != std::string::npos) continue;  // zero while B is zero
    double sum = 0;
    for (float x : g.tensor.to_f32_vector()) sum += std::fabs(x);
    EXPECT_GT(sum, 0) << g.name;
    ++adapters;
  }
  // q and v in 3 layers, gate_proj in the dense layer 1 only: 7 lora_B.
  EXPECT_EQ(adapters, 7);
}

// Tensor parallelism splits attention (and dense MLP layers) but keeps the router and the
// expert stacks whole on every rank (--ep_size splits the experts).
TEST(MoeCheckpoint, TensorParallelKeepsExpertsWhole) {
  const ModelConfig c = load_model_config(fixture("qwen3_moe_topk_norm") + "/config.json");
  int whole = 0, split = 0;
  for (const ParamSpec& p : parameter_layout(c, 1, 2)) {
    const bool expert = p.slot == ParamSlot::kRouter || p.slot == ParamSlot::kExpertsGateUp ||
                        p.slot == ParamSlot::kExpertsDown;
    if (expert) {
      EXPECT_EQ(p.tp_dim, -1) << p.name;
      EXPECT_EQ(p.shape, p.full_shape) << p.name;
      ++whole;
    }
    if (p.slot == ParamSlot::kQ) {
      EXPECT_EQ(p.shape[0] * 2, p.full_shape[0]) << p.name;
      ++split;
    }
  }
  EXPECT_GT(whole, 0);
  EXPECT_GT(split, 0);
}

}  // namespace
}  // namespace sft::model
