// QLoRA's frozen base (Transformer::load_4bit / random_4bit, model/quant4_plan.h) against
// bitsandbytes: the tiny Qwen3 fixture quantized at load gives the packed bytes and absmax that
// transformers + bitsandbytes 0.50 stored when they loaded it with load_in_4bit
// (tests/fixtures/bnb4/qwen3_*, tools/make_bnb4_goldens.py); the stored folders load as they
// are, with the same numbers; which tensors stay unquantized follows transformers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "model/model_dir.h"
#include "model/quant4_weight.h"
#include "model/transformer.h"
#include "ops/cpu/bnb_quant.h"
#include "test_paths.h"

namespace sft::model {
namespace {

std::string fixture(const std::string& name) {
  return test::source_path("tests/fixtures/bnb4/" + name);
}

Quant4Plan plan_of(const std::string& name) {
  Quant4Plan plan;
  plan.type = name == "qwen3_fp4" ? ops::Quant4Type::kFp4 : ops::Quant4Type::kNf4;
  plan.nested = name == "qwen3_nf4_nested";
  return plan;
}

std::vector<uint8_t> bytes_of(const ops::View& v) {
  const auto* p = v.as<uint8_t>();
  return {p, p + v.numel()};
}

std::vector<float> floats_of(const ops::View& v) {
  const float* p = v.as<float>();
  return {p, p + v.numel()};
}

class Quant4Load : public ::testing::TestWithParam<const char*> {};

// Quantization at load equals bitsandbytes.functional.quantize_4bit as transformers ran it.
TEST_P(Quant4Load, QuantizedAtLoadAsBitsandbytesStoredIt) {
  const std::string name = GetParam();
  const Transformer m =
      Transformer::load_4bit(test::source_path("tests/fixtures/models/qwen3"), plan_of(name));
  const SafetensorsFile stored = SafetensorsFile::open(fixture(name) + "/model.safetensors");
  int four_bit = 0;
  for (const Parameter& p : m.params().all()) {
    ASSERT_EQ(p.is_4bit(), is_quant4_weight(stored, p.spec.name)) << p.spec.name;
    if (!p.is_4bit()) {
      EXPECT_NE(p.value.data, nullptr) << p.spec.name;  // embedding, norms: fp32
      continue;
    }
    ++four_bit;
    EXPECT_EQ(p.value.data, nullptr) << p.spec.name << " keeps an fp32 copy";
    const Quant4Weight w = read_quant4_weight(stored, p.spec.name);
    EXPECT_EQ(bytes_of(p.quant4.packed), w.packed) << p.spec.name;
    EXPECT_EQ(p.quant4.rows, w.state.shape[0]);
    EXPECT_EQ(p.quant4.cols, w.state.shape[1]);
    EXPECT_EQ(p.quant4.blocksize, 64);
    const std::vector<float> absmax = floats_of(p.quant4.absmax);
    ASSERT_EQ(absmax.size(), w.absmax.size());
    // Nested: torch's mean of the absmax (the offset added back) may be one ulp from sft's,
    // and so the sum may be: two ulps of the absmax at most; unnested: exact.
    double worst = 0;
    for (size_t i = 0; i < absmax.size(); ++i) {
      const float ulp = std::nextafter(w.absmax[i], INFINITY) - w.absmax[i];
      worst = std::max(worst, std::fabs(double(absmax[i]) - w.absmax[i]) / ulp);
    }
    EXPECT_LE(worst, w.state.nested ? 2.0 : 0.0) << p.spec.name << " (ulps)";
  }
  EXPECT_EQ(four_bit, 14);  // 7 projections × 2 layers; the tied embedding stays fp32
}

// A folder saved 4-bit loads as stored: every weight dequantizes to bitsandbytes' reference,
// and the model computes what the one quantized at load computes.
TEST_P(Quant4Load, PreQuantizedFolderLoadsAsStored) {
  const std::string name = GetParam();
  const SafetensorsCheckpoint ckpt = SafetensorsCheckpoint::open_dir(fixture(name));
  const ModelDir dir = open_model_dir(fixture(name));
  const LayoutMismatch mm = compare_with_layout(ckpt, parameter_layout(dir.config));
  EXPECT_TRUE(mm.ok()) << describe_mismatch(mm);
  Transformer stored = Transformer::load_4bit(fixture(name), Quant4Plan{});
  const SafetensorsFile reference = SafetensorsFile::open(fixture(name) + "/reference.safetensors");
  int four_bit = 0;
  for (const Parameter& p : stored.params().all()) {
    if (!p.is_4bit()) continue;
    ++four_bit;
    std::vector<float> w(static_cast<size_t>(p.quant4.rows * p.quant4.cols));
    ops::cpu::dequantize_4bit(bytes_of(p.quant4.packed), floats_of(p.quant4.absmax), 64,
                              p.quant4.type, w);
    const std::vector<float> want = reference.tensor(p.spec.name).to_f32_vector();
    EXPECT_EQ(std::memcmp(w.data(), want.data(), w.size() * sizeof(float)), 0) << p.spec.name;
  }
  EXPECT_EQ(four_bit, 14);

  Transformer quantized =
      Transformer::load_4bit(test::source_path("tests/fixtures/models/qwen3"), plan_of(name));
  Batch batch;
  for (int i = 0; i < 12; ++i) batch.tokens.push_back((i * 37 + 5) % stored.config().vocab_size);
  batch.labels = batch.tokens;
  std::vector<float> a(batch.tokens.size() * stored.config().vocab_size), b(a.size());
  const LossStats la = stored.forward(batch, a.data());
  const LossStats lb = quantized.forward(batch, b.data());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  EXPECT_LE(worst, 1e-5);  // only the nested offset's last ulp may differ
  EXPECT_NEAR(la.loss_sum, lb.loss_sum, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Quant4Load, ::testing::Values("qwen3_nf4_nested", "qwen3_fp4"));

// transformers' llm_int8_skip_modules keep the named modules unquantized.
TEST(Quant4Plan, SkipModulesStayUnquantized) {
  Quant4Plan plan;
  plan.skip_modules = {"down_proj", "model.layers.1.self_attn"};
  const Transformer m =
      Transformer::load_4bit(test::source_path("tests/fixtures/models/qwen3"), plan);
  for (const Parameter& p : m.params().all()) {
    const bool kept = p.spec.name.find("down_proj") != std::string::npos ||
                      p.spec.name.find("layers.1.self_attn") != std::string::npos ||
                      p.spec.layer < 0 || p.spec.shape.size() != 2 ||
                      p.spec.name.find("norm") != std::string::npos;
    EXPECT_EQ(p.is_4bit(), !kept) << p.spec.name;
  }
}

// random_4bit draws random()'s numbers: its 4-bit weights are random()'s quantized, the rest
// equal, without the 4-bit weights ever stored in fp32.
TEST(Quant4Random, EqualsRandomQuantized) {
  const ModelDir dir = open_model_dir(test::source_path("tests/fixtures/models/qwen3"));
  Quant4Plan plan;
  plan.nested = true;
  const Transformer q = Transformer::random_4bit(dir.config, 7, 0.02f, plan);
  const Transformer f = Transformer::random(dir.config, 7, 0.02f);
  for (size_t i = 0; i < q.params().all().size(); ++i) {
    const Parameter& pq = q.params().all()[i];
    const Parameter& pf = f.params().all()[i];
    if (!pq.is_4bit()) {
      ASSERT_EQ(floats_of(pq.value), floats_of(pf.value)) << pq.spec.name;
      continue;
    }
    const Quant4Data want = quantize_for_plan(floats_of(pf.value), plan);
    EXPECT_EQ(bytes_of(pq.quant4.packed), want.packed) << pq.spec.name;
    EXPECT_EQ(floats_of(pq.quant4.absmax), want.absmax) << pq.spec.name;
  }
}

// A bitsandbytes quantization_config is read; other methods and 8-bit are refused.
TEST(Quant4Plan, FromModelConfig) {
  const Json config = read_json_file(fixture("qwen3_nf4_nested") + "/config.json", "test");
  const std::optional<Quant4Plan> plan = plan_from_model_config(config, "config.json");
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->type, ops::Quant4Type::kNf4);
  EXPECT_TRUE(plan->nested);
  EXPECT_FALSE(plan_from_model_config(Json::object(), "config.json"));
  Json gptq = Json::parse(R"({"quantization_config": {"quant_method": "gptq"}})");
  EXPECT_THROW(plan_from_model_config(gptq, "config.json"), Error);
  Json int8 = Json::parse(
      R"({"quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": true}})");
  EXPECT_THROW(plan_from_model_config(int8, "config.json"), Error);
}

}  // namespace
}  // namespace sft::model
