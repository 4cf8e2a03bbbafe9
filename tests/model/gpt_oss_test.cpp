// gpt-oss beyond the parity test (fixture gpt_oss_experts_sinks, parity_test.cpp and
// moe_test.cpp's aux loss): its config keys and GptOssConfig's defaults, the config written
// back, its quantization_config (MXFP4 read, others refused; the MXFP4 folders themselves are
// mxfp4_test.cpp's), and the experts between sft's stacks and the form on disk
// (mlp.experts.gate_up_proj (E, C, 2I) with gate and up in alternating columns, down_proj
// (E, I, C), gate_up_proj_bias interleaved the same way): read element by element, saved in the
// same form bit for bit, and read again unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "model/blocks/layer_plan.h"
#include "model/config.h"
#include "model/transformer.h"
#include "test_paths.h"
#include "train/export.h"

namespace sft::model {
namespace {

std::string fixture() {
  return test::source_path("tests/fixtures/parity/gpt_oss_experts_sinks");
}

std::string error_of(const Json& j) {
  try {
    parse_model_config(j, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GptOss, ConfigKeys) {
  const ModelConfig c = load_model_config(fixture() + "/config.json");
  EXPECT_EQ(c.model_type, ModelType::kGptOss);
  EXPECT_EQ(c.num_experts, 4);  // num_local_experts
  EXPECT_EQ(c.num_experts_per_tok, 2);
  EXPECT_EQ(c.moe_intermediate_size, 32);  // intermediate_size
  EXPECT_TRUE(c.norm_topk_prob);           // softmax over the top-k logits
  EXPECT_TRUE(c.router_bias);
  EXPECT_TRUE(c.expert_biases);
  EXPECT_DOUBLE_EQ(c.swiglu_limit, 1.2);
  EXPECT_DOUBLE_EQ(c.swiglu_alpha, 1.702);
  EXPECT_TRUE(c.attention_sinks);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_TRUE(c.o_bias);
  ASSERT_TRUE(c.sliding_window.has_value());
  EXPECT_EQ(*c.sliding_window, 8);
  EXPECT_EQ(c.layer_sliding_window, (std::vector<bool>{true, false}));
  EXPECT_EQ(c.rope.type, RopeType::kYarn);
  EXPECT_DOUBLE_EQ(c.rope.factor, 32.0);
  EXPECT_DOUBLE_EQ(c.rope.theta, 150000.0);
  EXPECT_FALSE(c.rope.truncate);
  EXPECT_EQ(c.experts_on_disk, ExpertsOnDisk::kTransposedInterleaved);
  EXPECT_DOUBLE_EQ(c.router_aux_loss_coef, 0.001);
  std::vector<std::string> names;
  for (const ParamSpec& p : parameter_layout(c)) names.push_back(p.name);
  for (const char* n :
       {"model.layers.1.mlp.router.weight", "model.layers.1.mlp.router.bias",
        "model.layers.1.mlp.experts.gate_up_proj", "model.layers.1.mlp.experts.gate_up_proj_bias",
        "model.layers.1.mlp.experts.down_proj", "model.layers.1.mlp.experts.down_proj_bias",
        "model.layers.1.self_attn.sinks", "model.layers.1.self_attn.o_proj.bias"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
}

// The layers' plans: sinks, the window on the sliding layer, gpt-oss's experts.
TEST(GptOss, LayerPlans) {
  const ModelConfig c = load_model_config(fixture() + "/config.json");
  const std::string sliding = describe(LayerPlan::of(c, 0, "config.json"), c.head_dim);
  const std::string full = describe(LayerPlan::of(c, 1, "config.json"), c.head_dim);
  EXPECT_NE(sliding.find("sinks, window 8"), std::string::npos) << sliding;
  EXPECT_NE(full.find("sinks, causal"), std::string::npos) << full;
  EXPECT_NE(full.find("experts (biased router and experts, clamped SwiGLU)"), std::string::npos)
      << full;
}

// GptOssConfig's defaults where config.json has no keys (the class's __post_init__).
TEST(GptOss, Defaults) {
  const ModelConfig c =
      parse_model_config(Json{{"model_type", "gpt_oss"}, {"num_hidden_layers", 4}}, "config.json");
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.num_experts_per_tok, 4);
  EXPECT_EQ(c.hidden_size, 2880);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_DOUBLE_EQ(c.swiglu_limit, 7.0);
  EXPECT_DOUBLE_EQ(c.swiglu_alpha, 1.702);
  EXPECT_TRUE(c.o_bias);  // attention_bias defaults to true
  ASSERT_TRUE(c.sliding_window.has_value());
  EXPECT_EQ(*c.sliding_window, 128);
  EXPECT_EQ(c.layer_sliding_window, (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(c.rope.type, RopeType::kYarn);
  EXPECT_DOUBLE_EQ(c.rope.factor, 32.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 4096);
  EXPECT_DOUBLE_EQ(c.rope.theta, 150000.0);
  EXPECT_FALSE(c.rope.truncate);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(GptOss, ConfigWrittenBackReadsTheSame) {
  const ModelConfig c = load_model_config(fixture() + "/config.json");
  const ModelConfig again = parse_model_config(model_config_to_json(c), "written");
  EXPECT_EQ(again.model_type, ModelType::kGptOss);
  EXPECT_DOUBLE_EQ(again.swiglu_limit, c.swiglu_limit);
  EXPECT_DOUBLE_EQ(again.swiglu_alpha, c.swiglu_alpha);
  EXPECT_EQ(again.num_experts, c.num_experts);
  EXPECT_EQ(again.layer_sliding_window, c.layer_sliding_window);
  EXPECT_EQ(again.o_bias, c.o_bias);
  EXPECT_EQ(again.rope.truncate, c.rope.truncate);
  EXPECT_EQ(parameter_layout(again).size(), parameter_layout(c).size());
}

// The released checkpoints' quantization_config is read (their MXFP4 experts: mxfp4_test.cpp);
// another method, and a limit that is not positive, are refused naming the key.
TEST(GptOss, ReadsMxfp4AndRefusesOtherMethodsAndBadLimits) {
  Json j = read_json_file(fixture() + "/config.json", "test");
  EXPECT_FALSE(parse_model_config(j, "config.json").experts_mxfp4);
  Json mx = j;
  mx["quantization_config"] = {{"quant_method", "mxfp4"},
                               {"modules_to_not_convert", Json::array()}};
  EXPECT_TRUE(parse_model_config(mx, "config.json").experts_mxfp4);
  Json other = j;
  other["quantization_config"] = {{"quant_method", "bitsandbytes"}};
  const std::string e = error_of(other);
  EXPECT_NE(e.find("key 'quantization_config'"), std::string::npos) << e;
  EXPECT_NE(e.find("quant_method \"bitsandbytes\" is not one sft reads for gpt-oss"),
            std::string::npos)
      << e;
  Json bad = j;
  bad["swiglu_limit"] = 0.0;
  EXPECT_NE(error_of(bad).find("swiglu_limit"), std::string::npos) << error_of(bad);
}

// Element (e, r, c) of sft's stacks against the tensors on disk; then save and reload.
TEST(GptOss, ExpertsOnDiskRoundTrip) {
  const std::string dir = fixture();
  const Transformer m = Transformer::load(dir);
  const SafetensorsFile disk = SafetensorsFile::open(dir + "/model.safetensors");
  const int64_t E = 4, I = 32, C = 64;
  const std::string layer = "model.layers.1.mlp.experts.";
  const std::vector<float> gu = disk.tensor(layer + "gate_up_proj").to_f32_vector();
  const std::vector<float> down = disk.tensor(layer + "down_proj").to_f32_vector();
  const std::vector<float> gub = disk.tensor(layer + "gate_up_proj_bias").to_f32_vector();
  const float* s_gu = m.params().named(layer + "gate_up_proj").value.as<float>();
  const float* s_down = m.params().named(layer + "down_proj").value.as<float>();
  const float* s_gub = m.params().named(layer + "gate_up_proj_bias").value.as<float>();
  for (int64_t e = 0; e < E; ++e)
    for (int64_t i = 0; i < I; ++i) {
      // sft (E, 2I, C): gate row i, then up row i; disk (E, C, 2I): columns 2i and 2i + 1.
      for (int64_t c = 0; c < C; ++c) {
        ASSERT_EQ(s_gu[(e * 2 * I + i) * C + c], gu[(e * C + c) * 2 * I + 2 * i]);
        ASSERT_EQ(s_gu[(e * 2 * I + I + i) * C + c], gu[(e * C + c) * 2 * I + 2 * i + 1]);
        ASSERT_EQ(s_down[(e * C + c) * I + i], down[(e * I + i) * C + c]);  // (E, C, I)
      }
      ASSERT_EQ(s_gub[e * 2 * I + i], gub[e * 2 * I + 2 * i]);
      ASSERT_EQ(s_gub[e * 2 * I + I + i], gub[e * 2 * I + 2 * i + 1]);
    }

  const std::string out = test::fresh_output_dir("gpt_oss_round_trip");
  std::filesystem::copy_file(dir + "/config.json", out + "/config.json");
  m.save(out, DType::kF32);
  // The same names, shapes and bytes as transformers wrote.
  const SafetensorsCheckpoint saved = SafetensorsCheckpoint::open_dir(out);
  const SafetensorsCheckpoint source = SafetensorsCheckpoint::open_dir(dir);
  EXPECT_EQ(saved.names().size(), source.names().size());
  for (const std::string& n : source.names()) {
    ASSERT_TRUE(saved.contains(n)) << n;
    const Tensor a = saved.tensor(n), b = source.tensor(n);
    EXPECT_EQ(a.shape(), b.shape()) << n;
    ASSERT_EQ(a.nbytes(), b.nbytes()) << n;
    EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.nbytes()), 0) << n;
  }
  const Transformer again = Transformer::load(out);
  const std::span<const float> a = m.params().values(), b = again.params().values();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin()));
  std::filesystem::remove_all(out);
}

// A ZeRO-3 export: this rank's arena holds zeros where the other ranks hold the values, and the
// export reads each tensor's gathered values through `whole` (train/export.h). The experts'
// transposed copies are made from those, so the folder has transformers' bytes.
TEST(GptOss, ShardedExportConvertsTheGatheredValues) {
  const std::string dir = fixture();
  Transformer m = Transformer::load(dir);
  const std::span<float> arena = m.trainable().values();
  const std::vector<float> gathered(arena.begin(), arena.end());
  std::fill(arena.begin(), arena.end(), 0.0f);
  const float* base = arena.data();
  const WholeTensor whole = [&](const Tensor& view) {
    return gathered.data() + (reinterpret_cast<const float*>(view.bytes()) - base);
  };
  const std::string out = test::fresh_output_dir("gpt_oss_sharded_export");
  ExportOptions o;
  o.source_model_dir = dir;
  export_hf_model(m, out, o, whole);
  const SafetensorsCheckpoint saved = SafetensorsCheckpoint::open_dir(out);
  const SafetensorsCheckpoint source = SafetensorsCheckpoint::open_dir(dir);
  ASSERT_EQ(saved.names().size(), source.names().size());
  for (const std::string& n : source.names()) {
    const Tensor a = saved.tensor(n), b = source.tensor(n);
    ASSERT_EQ(a.nbytes(), b.nbytes()) << n;
    EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.nbytes()), 0) << n;
  }
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace sft::model
