// A frozen base holding its matrices in bf16 (model/frozen_base.h):
//   - the form's rules: the LM head in bf16 under bf16 compute, the embedding only when the
//     reference loads the weights in bf16, norms never, modules_to_save targets not before
//     LoRA has copied them;
//   - QLoRA's base read (load_4bit) or drawn (random_4bit) straight into that form: no fp32
//     values for those matrices, their bf16 values the rounded fp32 ones bit for bit, and the
//     model computes bit for bit what the fp32-then-released base computes (logits, loss,
//     adapter gradients);
//   - a bf16 table's lookups equal those of an fp32 table holding the same (bf16) values.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "model/frozen_base.h"
#include "model/model_dir.h"
#include "model/param_slices.h"
#include "model/transformer.h"
#include "test_paths.h"

namespace sft::model {
namespace {

const char* kQwen3 = "tests/fixtures/models/qwen3";

ModelConfig qwen3_config(bool tied) {
  ModelConfig c = open_model_dir(test::source_path(kQwen3)).config;
  c.tie_word_embeddings = tied;
  return c;
}

Batch some_batch(int64_t vocab) {
  Batch b;
  for (int i = 0; i < 24; ++i) b.tokens.push_back((i * 37 + 5) % vocab);
  b.labels = b.tokens;
  b.doc_lengths = {14, 10};
  return b;
}

LoraConfig all_linear() {
  LoraConfig c;
  c.r = 4;
  c.alpha = 8;
  c.dropout = 0;
  c.target_modules = {"all-linear"};
  return c;
}

// LoRA on, B random (so the adapters matter), then the base kept in bf16 as `form` says.
void train_setup(Transformer& m, const FrozenBaseForm& form,
                 const LoraConfig& lora = all_linear()) {
  m.enable_lora(lora, 5, "test");
  Rng rng(17, 1);
  for (const LoraAdapter& a : m.lora()->adapters()) {
    float* b = a.b->value.as<float>();
    for (int64_t i = 0; i < a.b->value.numel(); ++i) b[i] = 0.1f * rng.normal();
  }
  // A base built in its bf16 form computes in bf16 already: the adapters' copies exist.
  if (m.lora()->params().has_bf16_copies()) m.lora()->params().refresh_bf16_copies();
  m.keep_frozen_base_in_bf16(form);
}

struct Step {
  std::vector<float> logits, grads;
  double loss = 0;
};

Step step(Transformer& m) {
  const Batch batch = some_batch(m.config().vocab_size);
  Step s;
  s.logits.resize(batch.tokens.size() * static_cast<size_t>(m.config().vocab_size));
  m.forward(batch, s.logits.data());
  s.loss = m.forward(batch, nullptr, 1.0).loss_sum;
  m.backward(1.0);
  const auto g = m.trainable().grads();
  s.grads.assign(g.begin(), g.end());
  return s;
}

void expect_same_step(Transformer& a, Transformer& b) {
  const Step sa = step(a), sb = step(b);
  EXPECT_EQ(sa.logits, sb.logits);
  EXPECT_EQ(sa.loss, sb.loss);
  EXPECT_EQ(sa.grads, sb.grads);
}

std::vector<uint16_t> rounded(const float* v, int64_t n) {
  std::vector<uint16_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = f32_to_bf16(v[i]);
  return out;
}

std::vector<uint16_t> bf16_of(const Parameter& p) {
  const auto* d = p.bf16.as<uint16_t>();
  return {d, d + p.bf16.numel()};
}

TEST(FrozenBaseForm, HoldsInBf16WhatTheReferenceComputesInBf16) {
  const std::vector<ParamSpec> layout = parameter_layout(qwen3_config(false));
  auto spec = [&](const std::string& name) -> const ParamSpec& {
    for (const ParamSpec& s : layout)
      if (s.name == name) return s;
    throw std::runtime_error("no " + name);
  };
  const ParamSpec& embed = spec("model.embed_tokens.weight");
  const ParamSpec& head = spec("lm_head.weight");
  const ParamSpec& norm = spec("model.norm.weight");
  const ParamSpec& q = spec("model.layers.0.self_attn.q_proj.weight");

  const FrozenBaseForm fp32_compute;  // no bf16 compute: everything fp32
  for (const ParamSpec* s : {&embed, &head, &norm, &q}) EXPECT_FALSE(fp32_compute.held_in_bf16(*s));

  const FrozenBaseForm f32_load = FrozenBaseForm::bf16(DType::kF32);  // TRL's default dtype
  EXPECT_TRUE(f32_load.held_in_bf16(head));
  EXPECT_TRUE(f32_load.held_in_bf16(q));  // a projection left unquantized
  EXPECT_FALSE(f32_load.held_in_bf16(embed));
  EXPECT_TRUE(f32_load.keeps_fp32(embed));
  EXPECT_FALSE(f32_load.held_in_bf16(norm));
  EXPECT_TRUE(f32_load.keeps_fp32(norm));

  const FrozenBaseForm bf16_load = FrozenBaseForm::bf16(DType::kBF16);  // --dtype bfloat16
  EXPECT_TRUE(bf16_load.held_in_bf16(embed));
  EXPECT_FALSE(bf16_load.keeps_fp32(embed));
  EXPECT_FALSE(FrozenBaseForm::bf16(DType::kF16).held_in_bf16(embed));

  // PEFT copies what modules_to_save names from the loaded values: those load in fp32.
  const FrozenBaseForm saved = FrozenBaseForm::bf16(DType::kBF16, {"lm_head", "embed_tokens"});
  EXPECT_FALSE(saved.held_in_bf16(head));
  EXPECT_FALSE(saved.held_in_bf16(embed));
  EXPECT_FALSE(saved.keeps_fp32(head));  // released once copied
  EXPECT_TRUE(saved.held_in_bf16(q));
}

// random_4bit with a form: the LM head (and, loaded in bf16, the embedding) drawn straight into
// bf16 — random()'s numbers rounded — and the step bit for bit the released base's.
TEST(FrozenBase, Random4bitDrawsStraightIntoBf16) {
  Quant4Plan plan;
  for (const bool tied : {false, true}) {
    for (const DType load : {DType::kF32, DType::kBF16}) {
      SCOPED_TRACE(std::string(tied ? "tied" : "untied") + ", loaded in " +
                   std::string(dtype_name(load)));
      const ModelConfig config = qwen3_config(tied);
      const FrozenBaseForm form = FrozenBaseForm::bf16(load);
      Transformer direct = Transformer::random_4bit(config, 7, 0.02f, plan, form);
      Transformer released = Transformer::random_4bit(config, 7, 0.02f, plan);
      const Transformer fp32 = Transformer::random(config, 7, 0.02f);
      for (size_t i = 0; i < direct.params().all().size(); ++i) {
        const Parameter& p = direct.params().all()[i];
        const Parameter& want = fp32.params().all()[i];
        if (!form.held_in_bf16(p.spec) || p.is_4bit()) continue;
        EXPECT_TRUE(p.value.empty()) << p.spec.name << " has fp32 values";
        EXPECT_EQ(bf16_of(p), rounded(want.value.as<float>(), want.value.numel())) << p.spec.name;
      }
      const Parameter& embed = direct.params().at(ParamSlot::kEmbed);
      EXPECT_EQ(embed.value.empty(), load == DType::kBF16);
      if (!tied) EXPECT_TRUE(direct.params().at(ParamSlot::kLmHead).value.empty());
      train_setup(direct, form);
      train_setup(released, form);
      expect_same_step(direct, released);
    }
  }
}

// load_4bit with a form: the same from the checkpoint (the fixture's tied table, and an
// unquantized projection, llm_int8_skip_modules).
TEST(FrozenBase, Load4bitReadsStraightIntoBf16) {
  Quant4Plan plan;
  plan.skip_modules = {"model.layers.1.mlp.down_proj"};
  const std::string dir = test::source_path(kQwen3);
  const SafetensorsCheckpoint ckpt = SafetensorsCheckpoint::open_dir(dir);
  for (const DType load : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE("loaded in " + std::string(dtype_name(load)));
    const FrozenBaseForm form = FrozenBaseForm::bf16(load);
    Transformer direct = Transformer::load_4bit(dir, plan, form);
    Transformer released = Transformer::load_4bit(dir, plan);
    int held = 0;
    for (const Parameter& p : direct.params().all()) {
      if (!form.held_in_bf16(p.spec) || p.is_4bit()) continue;
      ++held;
      EXPECT_TRUE(p.value.empty()) << p.spec.name << " has fp32 values";
      const std::vector<float> file = ckpt.tensor(p.spec.name).to_f32_vector();
      EXPECT_EQ(bf16_of(p), rounded(file.data(), static_cast<int64_t>(file.size()))) << p.spec.name;
    }
    EXPECT_EQ(held, load == DType::kBF16 ? 2 : 1);  // down_proj, and the table in bf16
    train_setup(direct, form);
    train_setup(released, form);
    expect_same_step(direct, released);
  }
}

// A bf16 table's lookups are its values widened: the same step as an fp32 table that holds the
// same bf16-representable values (what a bf16 checkpoint gives), the head in bf16 in both.
TEST(FrozenBase, Bf16TableLooksUpWhatAnFp32TableOfItsValuesDoes) {
  const ModelConfig config = qwen3_config(false);
  Transformer held = Transformer::random(config, 3), kept = Transformer::random(config, 3);
  for (Transformer* m : {&held, &kept}) {
    float* table = m->param_data("model.embed_tokens.weight");
    const int64_t n = m->params().at(ParamSlot::kEmbed).value.numel();
    for (int64_t i = 0; i < n; ++i) table[i] = bf16_to_f32(f32_to_bf16(table[i]));
  }
  train_setup(held, FrozenBaseForm::bf16(DType::kBF16));
  train_setup(kept, FrozenBaseForm::bf16(DType::kF32));
  EXPECT_TRUE(held.params().at(ParamSlot::kEmbed).value.empty());
  EXPECT_FALSE(kept.params().at(ParamSlot::kEmbed).value.empty());
  expect_same_step(held, kept);
}

// modules_to_save: the head loads in fp32, PEFT's copy is made from those values, and the base
// head is then released like the rest.
TEST(FrozenBase, ModulesToSaveAreCopiedFromFp32) {
  const ModelConfig config = qwen3_config(false);
  Quant4Plan plan;
  const FrozenBaseForm form = FrozenBaseForm::bf16(DType::kBF16, {"lm_head"});
  Transformer m = Transformer::random_4bit(config, 7, 0.02f, plan, form);
  const Transformer fp32 = Transformer::random(config, 7, 0.02f);
  EXPECT_FALSE(m.params().at(ParamSlot::kLmHead).value.empty());
  LoraConfig lora = all_linear();
  lora.modules_to_save = {"lm_head"};
  train_setup(m, form, lora);
  const Parameter& base = m.params().at(ParamSlot::kLmHead);
  EXPECT_TRUE(base.value.empty());  // released after the copy
  const Parameter* copy = m.lora()->saved_copy_of(&base);
  ASSERT_NE(copy, nullptr);
  const ops::View want = fp32.params().at(ParamSlot::kLmHead).value;
  EXPECT_EQ(std::memcmp(copy->value.data, want.data, static_cast<size_t>(want.numel()) * 4), 0);
}

}  // namespace
}  // namespace sft::model
