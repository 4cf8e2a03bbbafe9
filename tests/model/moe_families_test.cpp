// Mixtral and GraniteMoe beyond the parity test (fixtures mixtral_experts_sliding and
// granitemoe_multipliers, parity_test.cpp and moe_test.cpp's aux loss): their config keys and
// defaults, the config written back, the refused router noise, and the experts between sft's
// stacks and each family's form on disk (Mixtral's block_sparse_moe.experts.<e>.w1/w3/w2 and
// block_sparse_moe.gate; GraniteMoe's input_linear / output_linear / router.layer), read, saved
// in the same form and read again unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/param_layout.h"
#include "model/transformer.h"
#include "test_paths.h"

namespace sft::model {
namespace {

std::string fixture(const std::string& name) {
  return test::source_path("tests/fixtures/parity/" + name);
}

std::string error_of(const Json& j) {
  try {
    parse_model_config(j, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MoeFamilies, MixtralConfig) {
  const ModelConfig c = load_model_config(fixture("mixtral_experts_sliding") + "/config.json");
  EXPECT_EQ(c.model_type, ModelType::kMixtral);
  EXPECT_EQ(c.num_experts, 4);  // num_local_experts
  EXPECT_EQ(c.num_experts_per_tok, 2);
  EXPECT_EQ(c.moe_intermediate_size, 32);  // intermediate_size is the expert's
  EXPECT_TRUE(c.norm_topk_prob);           // softmax, top-k, renormalise
  EXPECT_EQ(c.layer_moe, (std::vector<bool>{true, true}));
  EXPECT_FALSE(c.qkv_bias || c.o_bias);
  EXPECT_EQ(c.sliding_window, 8);
  EXPECT_EQ(c.layer_sliding_window, (std::vector<bool>{true, true}));
  EXPECT_EQ(c.moe_module + "." + c.router_module, "mlp.gate");
  EXPECT_EQ(c.experts_on_disk, ExpertsOnDisk::kPerExpertW);

  const Json written = model_config_to_json(c);
  EXPECT_EQ(written["num_local_experts"], 4);
  EXPECT_FALSE(written.contains("norm_topk_prob"));  // MixtralConfig has no such key
  const ModelConfig back = parse_model_config(written, "written");
  EXPECT_EQ(back.num_experts, 4);
  EXPECT_EQ(back.norm_topk_prob, true);
  EXPECT_EQ(back.sliding_window, 8);
  EXPECT_EQ(back.layer_moe, c.layer_moe);

  // MixtralConfig's defaults: 8 experts, 2 per token, theta 1e6, no window.
  const ModelConfig d = parse_model_config(Json{{"model_type", "mixtral"}}, "defaults");
  EXPECT_EQ(d.num_experts, 8);
  EXPECT_EQ(d.num_experts_per_tok, 2);
  EXPECT_EQ(d.rope.theta, 1000000.0);
  EXPECT_FALSE(d.sliding_window);

  Json noisy = written;
  noisy["router_jitter_noise"] = 0.01;
  const std::string e = error_of(noisy);
  EXPECT_NE(e.find("key 'router_jitter_noise'"), std::string::npos) << e;
  EXPECT_NE(e.find("set router_jitter_noise to 0.0"), std::string::npos) << e;
}

TEST(MoeFamilies, GraniteMoeConfig) {
  const ModelConfig c = load_model_config(fixture("granitemoe_multipliers") + "/config.json");
  EXPECT_EQ(c.model_type, ModelType::kGraniteMoe);
  EXPECT_EQ(c.num_experts, 4);
  EXPECT_EQ(c.num_experts_per_tok, 2);
  EXPECT_EQ(c.moe_intermediate_size, 32);
  EXPECT_TRUE(c.norm_topk_prob);  // softmax over the top-k logits
  EXPECT_EQ(c.layer_moe, (std::vector<bool>{true, true}));
  EXPECT_TRUE(c.qkv_bias && c.o_bias);
  EXPECT_EQ(c.embedding_multiplier, 4.0);
  EXPECT_EQ(c.residual_multiplier, 0.5);
  EXPECT_EQ(c.logits_scaling, 2.0);
  EXPECT_EQ(c.attention_scale, 0.1);
  EXPECT_EQ(c.moe_module + "." + c.router_module, "block_sparse_moe.router");
  EXPECT_EQ(c.experts_on_disk, ExpertsOnDisk::kStackedLinear);

  const ModelConfig back = parse_model_config(model_config_to_json(c), "written");
  EXPECT_EQ(back.num_experts, 4);
  EXPECT_EQ(back.embedding_multiplier, 4.0);
  EXPECT_EQ(back.attention_scale, 0.1);
  EXPECT_EQ(back.moe_module, "block_sparse_moe");

  // The parameters carry transformers 5's in-memory names.
  std::vector<std::string> names;
  for (const ParamSpec& p : parameter_layout(c)) names.push_back(p.name);
  for (const char* n : {"model.layers.1.block_sparse_moe.router.weight",
                        "model.layers.1.block_sparse_moe.experts.gate_up_proj",
                        "model.layers.1.block_sparse_moe.experts.down_proj"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}

// Loads `name`, checks one stacked block against the tensor on disk it came from, saves the
// model and checks the written names, and reloads it unchanged.
void round_trip(const std::string& name, const std::string& stack, int64_t stack_offset,
                const std::string& disk_tensor, const std::vector<std::string>& written,
                const std::vector<std::string>& not_written) {
  const std::string dir = fixture(name);
  const Transformer m = Transformer::load(dir);
  const SafetensorsFile disk = SafetensorsFile::open(dir + "/model.safetensors");
  const std::vector<float> want = disk.tensor(disk_tensor).to_f32_vector();
  const float* got = m.params().named(stack).value.as<float>() + stack_offset;
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << disk_tensor << " " << i;

  const std::string out = test::fresh_output_dir("moe_families_" + name);
  std::filesystem::copy_file(dir + "/config.json", out + "/config.json");
  m.save(out, DType::kF32);
  const SafetensorsCheckpoint saved = SafetensorsCheckpoint::open_dir(out);
  for (const std::string& n : written) EXPECT_TRUE(saved.contains(n)) << n;
  for (const std::string& n : not_written) EXPECT_FALSE(saved.contains(n)) << n;
  // Every stored name is one the source checkpoint has: the family's own form.
  const SafetensorsCheckpoint source = SafetensorsCheckpoint::open_dir(dir);
  for (const std::string& n : saved.names()) EXPECT_TRUE(source.contains(n)) << n;
  EXPECT_EQ(saved.names().size(), source.names().size());
  const Transformer again = Transformer::load(out);
  const std::span<const float> a = m.params().values(), b = again.params().values();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin()));
  std::filesystem::remove_all(out);
}

// The model FLOPs (tokens/s → GFLOP/s, the fraction of peak) count the k of E experts a token
// is routed to, not every expert; HF's total_flos keeps them all (count.total).
TEST(MoeFamilies, ModelFlopsCountTheRoutedExperts) {
  // qwen3_moe, decoder_sparse_step 2: layer 1 has 8 experts (moe_intermediate 24, hidden 64),
  // top-3; layer 0 is dense. Tied embeddings (256 × 64).
  const ModelConfig c = load_model_config(fixture("qwen3_moe_sparse_step") + "/config.json");
  const ParamCounts counts = count_parameters(parameter_layout(c));
  const int64_t experts = 8 * (2 * 24 * 64 + 64 * 24);
  EXPECT_EQ(counts.experts, experts);
  EXPECT_EQ(counts.lm_head, 0);
  EXPECT_DOUBLE_EQ(matmul_params_per_token(c, counts),
                   double(counts.total - experts) + double(experts) * 3.0 / 8.0);

  ModelConfig dense = c;
  dense.num_experts = dense.num_experts_per_tok = 0;
  const ParamCounts dense_counts = count_parameters(parameter_layout(dense));
  EXPECT_EQ(dense_counts.experts, 0);
  EXPECT_DOUBLE_EQ(matmul_params_per_token(dense, dense_counts), double(dense_counts.total));
}

TEST(MoeFamilies, MixtralExpertsOnDiskRoundTrip) {
  // Expert 1's up rows (w3) in layer 0's stack: rows [2I + I, 4I) of (E, 2I, C).
  const int64_t I = 32, C = 64;
  round_trip("mixtral_experts_sliding", "model.layers.0.mlp.experts.gate_up_proj", 3 * I * C,
             "model.layers.0.block_sparse_moe.experts.1.w3.weight",
             {"model.layers.1.block_sparse_moe.experts.3.w1.weight",
              "model.layers.1.block_sparse_moe.experts.3.w2.weight",
              "model.layers.0.block_sparse_moe.gate.weight"},
             {"model.layers.0.mlp.gate.weight", "model.layers.0.mlp.experts.gate_up_proj",
              "model.layers.0.mlp.experts.0.gate_proj.weight"});
}

TEST(MoeFamilies, GraniteMoeExpertsOnDiskRoundTrip) {
  // input_linear is the stack itself: layer 1's whole gate_up_proj.
  round_trip("granitemoe_multipliers", "model.layers.1.block_sparse_moe.experts.gate_up_proj", 0,
             "model.layers.1.block_sparse_moe.input_linear.weight",
             {"model.layers.0.block_sparse_moe.output_linear.weight",
              "model.layers.0.block_sparse_moe.router.layer.weight"},
             {"model.layers.0.block_sparse_moe.experts.gate_up_proj",
              "model.layers.0.block_sparse_moe.router.weight"});
}

}  // namespace
}  // namespace sft::model
