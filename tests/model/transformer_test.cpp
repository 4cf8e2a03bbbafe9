// Transformer behaviour beyond parity: packed batches equal their documents run alone,
// bit-identical reruns, micro-batch accumulation, weight round trips and batch validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "model/blocks/layer_plan.h"
#include "model/transformer.h"
#include "ops/profile.h"
#include "test_paths.h"

namespace sft::model {
namespace {

std::string fixture(const std::string& name) {
  return test::source_path("tests/fixtures/parity/" + name);
}

Batch fixture_batch(const std::string& dir) {
  const SafetensorsFile f = SafetensorsFile::open(dir + "/expected.safetensors");
  auto ids = [&](const char* n) {
    auto v = f.tensor(n).values<int64_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  };
  return {ids("input_ids"), ids("labels"), ids("doc_lengths")};
}

std::vector<float> flat_grads(const Transformer& m) {
  std::vector<float> out;
  for (const NamedTensor& g : m.gradients()) {
    auto v = g.tensor.values<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

// Three documents packed into one stream give the logits, loss and gradients of the three
// run alone (for every architecture feature: sliding window, q/k norm, bias, tied head).
class Packed : public ::testing::TestWithParam<const char*> {};

TEST_P(Packed, EqualsDocumentsRunAlone) {
  Transformer m = Transformer::load(fixture(GetParam()));
  const Batch packed = fixture_batch(fixture(GetParam()));
  ASSERT_EQ(packed.doc_lengths.size(), 3u);
  const int64_t T = static_cast<int64_t>(packed.tokens.size()), V = m.config().vocab_size;
  std::vector<float> logits(static_cast<size_t>(T * V));
  m.zero_grad();
  const LossStats s = m.forward(packed, logits.data());
  m.backward(0.5f);
  const std::vector<float> packed_grads = flat_grads(m);

  m.zero_grad();
  std::vector<float> alone(static_cast<size_t>(T * V));
  LossStats sum;
  int64_t start = 0;
  for (int64_t n : packed.doc_lengths) {
    Batch doc{{packed.tokens.begin() + start, packed.tokens.begin() + start + n},
              {packed.labels.begin() + start, packed.labels.begin() + start + n},
              {}};
    const LossStats d = m.forward(doc, alone.data() + start * V);
    m.backward(0.5f);  // accumulates across the three, as micro-batches do
    sum.loss_sum += d.loss_sum;
    sum.count += d.count;
    sum.correct += d.correct;
    sum.entropy_sum += d.entropy_sum;
    start += n;
  }
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double(logits[i]) - alone[i]));
    max_abs = std::max(max_abs, std::fabs(double(alone[i])));
  }
  // fp32 noise only: projections run as one GEMM over all tokens vs one per document, and the
  // tiled attention's online softmax rounds per tile (measured up to 1.05e-6 · max|logit|);
  // a masking bug shows as 1e-2 or more. Gemma's soft-cap bounds max|logit| (4 here) below the
  // scale of the uncapped logits whose noise it passes on: measured 2.55e-6 · max|logit| (the
  // gradients, which a masking bug would break as well, agree to 1e-5 below).
  const bool capped = m.config().final_logit_softcapping > 0;
  EXPECT_LE(max_diff, (capped ? 1e-5 : 2e-6) * max_abs);
  EXPECT_EQ(s.count, sum.count);
  EXPECT_EQ(s.correct, sum.correct);
  // A token's cross-entropy moves by at most twice its largest logit change, so the sums may
  // differ by that noise over every scored token (a fixed 1e-5 on a sum near 118 failed by
  // 1.27e-5 on an AMX Xeon: 1e-7 relative, below fp32's resolution of the logits).
  EXPECT_NEAR(s.loss_sum, sum.loss_sum,
              std::max(1e-5, 2.0 * static_cast<double>(sum.count) * max_diff));
  EXPECT_NEAR(s.entropy_sum, sum.entropy_sum, 1e-5);
  // Same math; only the fp32 summation order of the weight gradients differs (one GEMM over
  // all tokens vs three accumulated ones), measured ≈ 1e-6 with OpenBLAS's Haswell kernels.
  EXPECT_LE(rel_diff(packed_grads, flat_grads(m)), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Packed,
                         ::testing::Values("mistral_sliding", "qwen3_qknorm_linear",
                                           "qwen2_bias_yarn", "smollm3_nope_sliding",
                                           "olmo2_post_norms", "granite_multipliers",
                                           "phi3_longrope_short", "phi3_longrope_long",
                                           "gemma3_sliding_softcap", "gemma2_softcaps"));

TEST(Transformer, RerunsAreBitIdentical) {
  Transformer m = Transformer::load(fixture("qwen3_qknorm_linear"));
  const Batch b = fixture_batch(fixture("qwen3_qknorm_linear"));
  std::vector<float> g[2];
  double loss[2];
  for (int run = 0; run < 2; ++run) {
    m.zero_grad();
    loss[run] = m.forward(b).loss_sum;
    m.backward(1.0f);
    g[run] = flat_grads(m);
  }
  EXPECT_EQ(loss[0], loss[1]);
  ASSERT_EQ(g[0].size(), g[1].size());
  EXPECT_EQ(std::memcmp(g[0].data(), g[1].data(), g[0].size() * sizeof(float)), 0);
}

// Checkpointing recomputes each layer before its backward; a pre-norm dense layer's
// recomputation skips the down projection and the residual add (LayerPlan::
// backward_reads_mlp_output), the other layers redo the whole forward. Either way the gradients
// are those of the run without it, bit for bit: f32 and bf16, with LoRA on every projection
// (the down projection's adapter keeps its forward's saved product), post norms (OLMo 2),
// residual multipliers (Granite) and experts.
struct CheckpointCase {
  const char* fixture;
  bool bf16, lora;
};

void PrintTo(const CheckpointCase& c, std::ostream* os) {
  *os << c.fixture << (c.bf16 ? " bf16" : " f32") << (c.lora ? " LoRA" : "");
}

class GradientCheckpointing : public ::testing::TestWithParam<CheckpointCase> {};

TEST_P(GradientCheckpointing, GivesTheSameGradients) {
  const CheckpointCase& c = GetParam();
  Transformer m = Transformer::load(fixture(c.fixture));
  if (c.lora) {
    LoraConfig config;
    config.r = 4;
    config.alpha = 8;
    config.target_modules = {"all-linear"};
    m.enable_lora(config, 7, "test");
    Rng rng(11, 1);  // B ≠ 0, so every adapter adds to its projection
    for (const LoraAdapter& a : m.lora()->adapters()) {
      float* b = a.b->value.as<float>();
      for (int64_t i = 0; i < a.b->value.numel(); ++i) b[i] = 0.1f * rng.normal();
    }
  }
  if (c.bf16) m.set_compute_dtype(DType::kBF16);
  const Batch b = fixture_batch(fixture(c.fixture));
  // None, checkpointing, checkpointing that keeps the MLP products: the same bits.
  std::vector<float> g[3];
  for (int mode = 0; mode < 3; ++mode) {
    m.set_gradient_checkpointing(mode > 0);
    m.set_checkpoint_keeps_mlp(mode == 2);
    m.zero_grad();
    m.forward(b);
    m.backward(1.0f);
    g[mode] = flat_grads(m);
  }
  for (int mode = 1; mode < 3; ++mode) {
    ASSERT_EQ(g[0].size(), g[mode].size());
    EXPECT_EQ(std::memcmp(g[0].data(), g[mode].data(), g[0].size() * sizeof(float)), 0)
        << "mode " << mode;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GradientCheckpointing,
                         ::testing::Values(CheckpointCase{"mistral_sliding", false, false},
                                           CheckpointCase{"qwen3_qknorm_linear", true, true},
                                           CheckpointCase{"qwen3_qknorm_linear", false, true},
                                           CheckpointCase{"olmo2_post_norms", false, false},
                                           CheckpointCase{"gemma3_sliding_softcap", true, false},
                                           CheckpointCase{"granite_multipliers", false, false},
                                           CheckpointCase{"qwen3_moe_topk_norm", false, false}),
                         [](const auto& info) {
                           return std::string(info.param.fixture) +
                                  (info.param.bf16 ? "_bf16" : "_f32") +
                                  (info.param.lora ? "_lora" : "");
                         });

// Which layers' recomputation may skip the MLP's output: pre-norm dense ones only.
TEST(GradientCheckpointingPlan, SkipsTheMlpOutputOfPreNormDenseLayersOnly) {
  for (const auto& [name, skips] :
       {std::pair{"mistral_sliding", true}, std::pair{"qwen3_qknorm_linear", true},
        std::pair{"granite_multipliers", true}, std::pair{"olmo2_post_norms", false},
        std::pair{"gemma3_sliding_softcap", false}, std::pair{"qwen3_moe_topk_norm", false}}) {
    const ModelConfig c = load_model_config(fixture(name) + "/config.json");
    EXPECT_EQ(!LayerPlan::of(c, 0, name).backward_reads_mlp_output(), skips) << name;
  }
}

// Calls of the op profile's rows whose name starts with `prefix` in one forward + backward.
int64_t calls_in_a_step(Transformer& m, const Batch& b, const std::string& prefix) {
  ops::reset_op_profile();
  m.forward(b);
  m.backward(1.0f);
  int64_t calls = 0;
  for (const ops::OpTime& row : ops::op_profile())
    if (row.op.starts_with(prefix)) calls += row.calls;
  return calls;
}

// The last layer's activations survive the forward in the shared set, so backward recomputes
// only the L − 1 layers before it: L + (L − 1) attention forwards a step, not 2 L; keeping the
// MLP products leaves out gate and up (2 products) of each of those L − 1. Counted by the op
// profile, so it runs under SFT_PROFILE=1 (ctest model.checkpointing_recomputes_l_minus_1).
TEST(GradientCheckpointing, RecomputesEveryLayerButTheLast) {
  if (!ops::profiling()) GTEST_SKIP() << "needs SFT_PROFILE=1";
  Transformer m = Transformer::load(fixture("qwen3_qknorm_linear"));
  const int64_t L = m.config().num_hidden_layers;
  ASSERT_GE(L, 2);
  m.set_gradient_checkpointing(true);
  const Batch b = fixture_batch(fixture("qwen3_qknorm_linear"));
  EXPECT_EQ(calls_in_a_step(m, b, "attention_forward"), 2 * L - 1);
  const int64_t matmuls = calls_in_a_step(m, b, "matmul");
  m.set_checkpoint_keeps_mlp(true);
  EXPECT_EQ(calls_in_a_step(m, b, "attention_forward"), 2 * L - 1);
  EXPECT_EQ(calls_in_a_step(m, b, "matmul"), matmuls - 2 * (L - 1));
}

TEST(Transformer, SavesWeightsInTheAskedDtypeAndLoadsThemBack) {
  Transformer m = Transformer::load(fixture("llama_gqa_tied_llama3"));
  const std::string out = test::fresh_output_dir("transformer_save");
  std::filesystem::copy_file(fixture("llama_gqa_tied_llama3") + "/config.json",
                             out + "/config.json");
  m.save(out, DType::kBF16);
  const SafetensorsFile f = SafetensorsFile::open(out + "/model.safetensors");
  EXPECT_EQ(f.find("lm_head.weight"), nullptr);  // tied: not written, as save_pretrained
  EXPECT_EQ(f.entries()[0].dtype, DType::kBF16);
  Transformer back = Transformer::load(out);
  const float orig = m.param_data("model.norm.weight")[3];
  const float rt = back.param_data("model.norm.weight")[3];
  EXPECT_NEAR(rt, orig, std::fabs(orig) / 128);
  EXPECT_EQ(rt,
            Tensor::borrow(DType::kF32, {1}, &orig, nullptr).to(DType::kBF16).to_f32_vector()[0]);
}

TEST(Transformer, RejectsMalformedBatches) {
  Transformer m = Transformer::load(fixture("llama_mha_untied"));
  EXPECT_THROW(m.forward(Batch{{1, 2, 999}, {}, {}}), Error);        // id ≥ V
  EXPECT_THROW(m.forward(Batch{{1, 2, 3}, {1, 2}, {}}), Error);      // labels length
  EXPECT_THROW(m.forward(Batch{{1, 2, 3}, {}, {1, 1}}), Error);      // lengths don't sum to T
  EXPECT_THROW(m.forward(Batch{{1, 2, 3}, {-5, 2, 3}, {}}), Error);  // bad label
  EXPECT_THROW(m.backward(1.0f), Error);                             // no forward yet
}

}  // namespace
}  // namespace sft::model

namespace sft::model {
namespace {

// A phi3 config.json beside split q/k/v and gate/up weights (a Llama checkpoint): the load
// fails before any training, naming the fused tensors it expected and the split ones it found.
TEST(Transformer, Phi3ConfigOverSplitWeightsNamesTheTensors) {
  namespace fs = std::filesystem;
  const std::string dir = test::fresh_output_dir("phi3_over_split_weights");
  const std::string src = fixture("llama_mha_untied");
  fs::copy_file(src + "/model.safetensors", dir + "/model.safetensors");
  Json config = read_json_file(src + "/config.json", "test");
  config["model_type"] = "phi3";
  config.erase("rope_scaling");
  config.erase("rope_parameters");
  write_file_atomically(dir + "/config.json", config.dump());
  try {
    Transformer::load(dir);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("missing model.layers.0.self_attn.qkv_proj.weight"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("unexpected model.layers.0.mlp.gate_proj.weight"), std::string::npos) << msg;
  }
}

// A multimodal gemma3 folder (Gemma3ForConditionalGeneration,
// tools/make_gemma3_multimodal_fixture.py) holds the parity fixture's text model under
// language_model.model.* beside a vision tower. Loaded, it is that text model without the
// final-logit soft-cap (transformers applies it in Gemma3ForCausalLM only): its logits and loss are
// transformers' for the multimodal model (the parity tolerances).
TEST(Transformer, MultimodalGemma3LoadsItsTextModel) {
  const std::string dir = test::source_path("tests/fixtures/models/gemma3_multimodal");
  Transformer mm = Transformer::load(dir);
  EXPECT_EQ(mm.config().final_logit_softcapping, 0.0);
  const SafetensorsFile expected = SafetensorsFile::open(dir + "/expected.safetensors");
  const Batch b = fixture_batch(dir);
  const int64_t V = mm.config().vocab_size;
  std::vector<float> logits(b.tokens.size() * static_cast<size_t>(V));
  const LossStats s = mm.forward(b, logits.data());
  const std::vector<float> want = expected.tensor("logits").to_f32_vector();
  ASSERT_EQ(want.size(), logits.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::fabs(double(want[i]) - logits[i]));
  EXPECT_LE(worst, 5e-5);
  const double loss = s.loss_sum / static_cast<double>(s.count);
  EXPECT_NEAR(loss, expected.tensor("loss").to_f32_vector()[0], 1e-5);
}

// The same text model stored as transformers names it in memory (model.language_model.*,
// lm_head.weight at the top) loads too.
TEST(Transformer, MultimodalGemma3InMemoryNamesLoad) {
  const std::string src = test::source_path("tests/fixtures/models/gemma3_multimodal");
  const std::string dir = test::fresh_output_dir("gemma3_multimodal_memory_names");
  std::filesystem::copy_file(src + "/config.json", dir + "/config.json",
                             std::filesystem::copy_options::overwrite_existing);
  const SafetensorsFile f = SafetensorsFile::open(src + "/model.safetensors");
  std::vector<NamedTensor> renamed;
  for (const TensorEntry& e : f.entries()) {
    std::string name = e.name;
    if (name.rfind("language_model.model.", 0) == 0)
      name = "model.language_model." + name.substr(sizeof("language_model.model.") - 1);
    else
      name = "model." + name;  // vision_tower.*, multi_modal_projector.*
    renamed.push_back({name, f.tensor(e)});
  }
  write_safetensors(dir + "/model.safetensors", renamed);
  Transformer a = Transformer::load(dir), b = Transformer::load(src);
  const std::vector<NamedTensor> pa = a.parameters(), pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].name, pb[i].name);
    EXPECT_EQ(pa[i].tensor.to_f32_vector(), pb[i].tensor.to_f32_vector()) << pa[i].name;
  }
}

}  // namespace
}  // namespace sft::model
