// LoRA's initial A matrices are TRL + PEFT's bit for bit for the same seed
// (tests/fixtures/lora_init/, tools/make_lora_init_goldens.py: SFTTrainer on the tiny Qwen3 of
// tests/fixtures/trl_parity, three seeds, ranks and target sets), and so are the adapter_init
// folders the LoRA parity goldens start from (tests/fixtures/lora/). Also torch's uniform_
// itself on a few elements worked by hand.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/torch_generator.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "model/lora.h"
#include "model/torch_init.h"
#include "model/transformer.h"
#include "test_paths.h"

namespace sft::model {
namespace {

const char* kBase = "tests/fixtures/trl_parity/model";

std::vector<uint32_t> bits_of(std::span<const float> v) {
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
  return out;
}

// Every A of `lora` against the file's tensor of the same key, and every key of the file used.
void expect_a_matrices(const LoraModel& lora, const SafetensorsFile& want,
                       const std::string& what) {
  size_t checked = 0;
  for (const LoraAdapter& ad : lora.adapters()) {
    const std::string& key = ad.a->spec.name;
    ASSERT_TRUE(want.find(key) != nullptr) << what << ": no " << key << " in the golden";
    const Tensor t = want.tensor(key);
    ASSERT_EQ(t.shape(), ad.a->spec.shape) << what << " " << key;
    const std::vector<uint32_t> got =
        bits_of({ad.a->value.as<float>(), static_cast<size_t>(ad.a->value.numel())});
    const std::vector<uint32_t> expected = bits_of(t.values<float>());
    size_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) differ += got[i] != expected[i];
    EXPECT_EQ(differ, 0u) << what << ": " << key << ", " << differ << " of " << got.size()
                          << " elements differ";
    ++checked;
  }
  size_t a_keys = 0;
  for (const TensorEntry& e : want.entries())
    a_keys += e.name.find(".lora_A.") != std::string::npos;
  EXPECT_EQ(checked, a_keys) << what;
}

}  // namespace

TEST(LoraInit, TheAMatricesAreTrlAndPeftsBitForBit) {
  for (const char* name : {"all7_r8_seed42", "default_r16_seed7", "mlp_r3_seed3000000019"}) {
    const std::string golden = test::source_path(std::string("tests/fixtures/lora_init/") + name);
    const Json meta = read_json_file(golden + ".json", "test");
    LoraConfig c;
    c.r = meta["lora"]["r"].get<int64_t>();
    c.alpha = meta["lora"]["lora_alpha"].get<double>();
    c.dropout = 0;
    if (!meta["lora"]["target_modules"].is_null())
      for (const Json& t : meta["lora"]["target_modules"])
        c.target_modules.push_back(t.get<std::string>());
    Transformer m = Transformer::load(test::source_path(kBase));
    const LoraModel& lora = m.enable_lora(c, meta["seed"].get<uint64_t>(), "test");
    EXPECT_EQ(lora.adapters().size(), meta["adapters"].size()) << name;
    expect_a_matrices(lora, SafetensorsFile::open(golden + ".safetensors"), name);
    for (const LoraAdapter& ad : lora.adapters())
      for (int64_t i = 0; i < ad.b->value.numel(); ++i) ASSERT_EQ(ad.b->value.as<float>()[i], 0.0f);
  }
}

// The parity goldens' starting adapters (r 8, seed 42 in every configuration) are what sft
// draws itself, so a run from the base model starts where TRL's did.
TEST(LoraInit, TheParityGoldensStartFromTheSameAdapters) {
  const std::vector<std::string> all7 = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                         "gate_proj", "up_proj", "down_proj"};
  for (const char* config : {"all7_nopack_gas1", "default_nopack_gas1"}) {
    LoraConfig c;
    c.r = 8;
    c.alpha = 16;
    c.dropout = 0;
    if (std::string(config).starts_with("all7")) c.target_modules = all7;
    Transformer m = Transformer::load(test::source_path(kBase));
    const LoraModel& lora = m.enable_lora(c, 42, "test");
    expect_a_matrices(
        lora,
        SafetensorsFile::open(test::source_path(std::string("tests/fixtures/lora/") + config +
                                                "/adapter_init/adapter_model.safetensors")),
        config);
  }
}

// Phi-3's fused qkv_proj and gate_up_proj: one A (r, C) and one B (fused rows, r) each under
// PEFT's key, drawn in PEFT's module order (o_proj before qkv_proj), so the adapters equal the
// adapter_init folders of the fused and all-linear goldens bit for bit; the parts (q, k, v;
// gate, up) bind their rows of the fused B.
TEST(LoraInit, Phi3FusedAdaptersArePeftsBitForBit) {
  for (const char* config : {"phi3_fused_bfd_gas4", "phi3_all_linear_bfd_gas4"}) {
    LoraConfig c;
    c.r = 8;
    c.alpha = 16;
    c.dropout = 0;
    c.target_modules = std::string(config) == "phi3_fused_bfd_gas4"
                           ? std::vector<std::string>{"qkv_proj", "gate_up_proj"}
                           : std::vector<std::string>{"all-linear"};
    Transformer m = Transformer::load(test::source_path("tests/fixtures/trl_parity/phi3_model"));
    LoraModel& lora = m.enable_lora(c, 42, "test");
    const SafetensorsFile want = SafetensorsFile::open(test::source_path(
        std::string("tests/fixtures/lora/") + config + "/adapter_init/adapter_model.safetensors"));
    expect_a_matrices(lora, want, config);
    for (const LoraAdapter& ad : lora.adapters()) {
      ASSERT_NE(want.find(ad.b->spec.name), nullptr) << ad.b->spec.name;
      EXPECT_EQ(want.tensor(ad.b->spec.name).shape(), ad.b->spec.shape) << ad.b->spec.name;
    }
    const ModelConfig& mc = m.config();
    const int64_t q = mc.num_attention_heads * mc.head_dim,
                  kv = mc.num_key_value_heads * mc.head_dim;
    const std::pair<ParamSlot, std::pair<int64_t, int64_t>> parts[] = {
        {ParamSlot::kQ, {0, q}},
        {ParamSlot::kK, {q, kv}},
        {ParamSlot::kV, {q + kv, kv}},
        {ParamSlot::kGate, {0, mc.intermediate_size}},
        {ParamSlot::kUp, {mc.intermediate_size, mc.intermediate_size}}};
    for (const auto& [slot, rows] : parts) {
      const Parameter& part = m.params().at(slot, 1);
      const LoraAdapter* ad = lora.adapter_for(&part);
      ASSERT_NE(ad, nullptr) << config << " slot " << static_cast<int>(slot);
      EXPECT_EQ(ad->b_begin, rows.first);
      EXPECT_EQ(ad->b_rows, rows.second);
      EXPECT_EQ(lora.base_of(ad), &part);
    }
  }
}

// torch.Generator().manual_seed(42) then torch.empty(4).uniform_(-0.25, 0.25): the generator's
// first words are 1608637542, 3421126067, 4083286876, 787846414 (std::mt19937(42)); masked to 24
// bits and scaled, x · 0.5 − 0.25 — exact here, the span being a power of two.
TEST(LoraInit, TorchUniformMapsEachDrawsLow24Bits) {
  TorchGenerator gen(42);
  std::vector<float> v(4);
  torch_uniform(gen, v, -0.25, 0.25);
  const uint32_t words[] = {1608637542u, 3421126067u, 4083286876u, 787846414u};
  for (size_t i = 0; i < 4; ++i) {
    const double x = static_cast<double>(words[i] & 0xffffffu) / 16777216.0;
    EXPECT_EQ(v[i], static_cast<float>(x * 0.5 - 0.25)) << i;
  }
  // A span that is not a power of two rounds once (fused), not twice.
  TorchGenerator g2(7), g3(7);
  std::vector<float> w(4096);
  torch_uniform(g2, w, -0.1, 0.1);
  int unfused_differs = 0;
  const float lo = static_cast<float>(-0.1), span = static_cast<float>(0.1) - lo;
  for (float got : w) {
    const float x = static_cast<float>(g3.random() & 0xffffffu) * 0x1p-24f;
    const volatile float product = x * span;  // rounded on its own
    unfused_differs += got != product + lo;
    EXPECT_EQ(got, static_cast<float>(static_cast<double>(x) * span + lo));  // exact product
  }
  EXPECT_GT(unfused_differs, 0);
}

}  // namespace sft::model
