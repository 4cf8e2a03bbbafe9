// gpt-oss folders with MXFP4 experts (model/mxfp4.h), against transformers on the fixtures of
// tools/make_mxfp4_fixture.py: the decoder over every (code, scale byte) pair, the experts a load
// holds (bit for bit what from_pretrained(..., Mxfp4Config(dequantize=True)) holds), logits,
// loss and gradients (parity_test.cpp's tolerances), what inspect and the export see, and one
// refusal per kind of bad input, each naming the file and the tensor or key.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "model/model_summary.h"
#include "model/mxfp4.h"
#include "model/quant4_plan.h"
#include "model/transformer.h"
#include "test_paths.h"
#include "train/export.h"

namespace sft::model {
namespace {

namespace fs = std::filesystem;

std::string fixture() {
  return test::source_path("tests/fixtures/mxfp4/gpt_oss_tiny");
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// A bf16 tensor's elements as their bits.
std::span<const bf16_bits> bf16_values(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kBF16);
  return {reinterpret_cast<const bf16_bits*>(t.bytes()), static_cast<size_t>(t.numel())};
}

std::vector<int64_t> ids(const SafetensorsFile& f, const std::string& name) {
  auto v = f.tensor(name).values<int64_t>();
  return {v.begin(), v.end()};
}

// transformers' convert_moe_packed_tensors over all 256 scale bytes × 16 codes (twice per row):
// its bf16 result (1, 32, 256) is the transposed decode, value k of row s at [0][k][s].
TEST(Mxfp4, DecodesEveryCodeAndScaleAsTransformers) {
  const SafetensorsFile table =
      SafetensorsFile::open(test::source_path("tests/fixtures/mxfp4/fp4_table.safetensors"));
  const Tensor blocks = table.tensor("blocks"), scales = table.tensor("scales");
  const std::span<const uint8_t> b = blocks.values<uint8_t>(), s = scales.values<uint8_t>();
  ASSERT_EQ(b.size(), 256u * 16);
  const Tensor golden_tensor = table.tensor("bf16");
  const std::span<const bf16_bits> golden = bf16_values(golden_tensor);
  int non_finite = 0;
  for (int64_t row = 0; row < 256; ++row) {
    std::vector<float> out(32);
    const int64_t first_bad = decode_mxfp4_row(b.subspan(row * 16, 16), s.subspan(row, 1), out);
    int64_t expect_bad = -1;
    for (int64_t k = 0; k < 32; ++k) {
      const float want = bf16_to_f32(golden[k * 256 + row]);
      const uint8_t code = (b[row * 16 + k / 2] >> (k % 2 ? 4 : 0)) & 15;
      ASSERT_EQ(bits(mxfp4_value(code, s[row])), bits(out[k])) << "row " << row << " k " << k;
      // Values are exact in bf16 (or inf in both): sft's float32 holds transformers' bf16 bits.
      EXPECT_EQ(bits(out[k]), bits(want)) << "scale " << row << " code " << int(code);
      if (!std::isfinite(want)) {
        ++non_finite;
        if (expect_bad < 0) expect_bad = k;
      }
    }
    EXPECT_EQ(first_bad, expect_bad) << "scale " << row;
  }
  EXPECT_EQ(non_finite, 48);  // inf: scale bytes 253..255 with large codes (as the script says)
}

TEST(Mxfp4, ExpertsAreTransformersDequantizedValuesBitForBit) {
  const Transformer m = Transformer::load(fixture());
  EXPECT_TRUE(m.config().experts_mxfp4);
  const SafetensorsFile expected = SafetensorsFile::open(fixture() + "/expected.safetensors");
  int compared = 0;
  // parameters() gives the experts in the form on disk: (E, C, 2I) and (E, I, C), as
  // transformers holds them after the dequantizing load.
  for (const NamedTensor& p : m.parameters()) {
    const std::string key = "dequantized." + p.name;
    if (!expected.find(key)) continue;
    const Tensor want = expected.tensor(key);
    ASSERT_EQ(want.shape(), p.tensor.shape()) << p.name;
    const std::span<const bf16_bits> w = bf16_values(want);
    const auto got = p.tensor.values<float>();
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_EQ(bits(got[i]), bits(bf16_to_f32(w[i]))) << p.name << " element " << i;
    ++compared;
  }
  EXPECT_EQ(compared, 4);  // two layers × gate_up_proj, down_proj
}

TEST(Mxfp4, LogitsLossAndGradientsMatchTransformers) {
  const SafetensorsFile expected = SafetensorsFile::open(fixture() + "/expected.safetensors");
  Transformer model = Transformer::load(fixture());
  const Batch batch{ids(expected, "input_ids"), ids(expected, "labels"),
                    ids(expected, "doc_lengths")};
  const int64_t T = static_cast<int64_t>(batch.tokens.size()), V = model.config().vocab_size;
  std::vector<float> logits(static_cast<size_t>(T * V));
  const LossStats stats = model.forward(batch, logits.data());
  const std::vector<float> ref = expected.tensor("logits").to_f32_vector();
  ASSERT_EQ(ref.size(), logits.size());
  double max_ref = 0, max_diff = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(double(ref[i])));
    max_diff = std::max(max_diff, std::fabs(double(ref[i]) - double(logits[i])));
  }
  EXPECT_LE(max_diff, 1e-4 * max_ref) << "max |Δlogit| " << max_diff << ", max |logit| " << max_ref;
  const double loss = stats.loss_sum / static_cast<double>(stats.count);
  const double ref_loss = expected.tensor("loss").to_f32_vector()[0];
  EXPECT_LE(std::fabs(loss - ref_loss), 1e-5) << "loss " << loss << " vs " << ref_loss;

  model.zero_grad();
  model.backward(1.0f / static_cast<float>(stats.count));
  int checked = 0;
  double worst = 0;
  for (const NamedTensor& g : model.gradients()) {
    if (!expected.find("grad." + g.name)) continue;  // the golden leaves out embeddings, LM head
    const std::vector<float> mine = g.tensor.to_f32_vector();
    const std::vector<float> theirs = expected.tensor("grad." + g.name).to_f32_vector();
    ASSERT_EQ(mine.size(), theirs.size()) << g.name;
    double num = 0, den = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      num += (double(mine[i]) - theirs[i]) * (double(mine[i]) - theirs[i]);
      den += double(theirs[i]) * theirs[i];
    }
    const double rel = std::sqrt(num / std::max(den, 1e-30));
    EXPECT_LE(rel, 1e-4) << g.name;
    worst = std::max(worst, rel);
    ++checked;
  }
  int golden = 0;
  for (const TensorEntry& e : expected.entries()) golden += e.name.starts_with("grad.");
  EXPECT_EQ(checked, golden);
  std::printf("[mxfp4] max|Δlogit| %.3g (max|logit| %.3g), |Δloss| %.3g, worst grad rel %.3g\n",
              max_diff, max_ref, std::fabs(loss - ref_loss), worst);
}

// `sft inspect`'s view: the pairs match the layout, the count is transformers' num_parameters.
TEST(Mxfp4, InspectSeesThePairsAndCountsTheDequantizedModel) {
  const ModelSummary s = summarize_model(fixture());
  EXPECT_TRUE(s.mismatch.ok()) << describe_mismatch(s.mismatch);
  const SafetensorsFile expected = SafetensorsFile::open(fixture() + "/expected.safetensors");
  EXPECT_EQ(s.counts.total, ids(expected, "num_parameters")[0]);
  ASSERT_TRUE(s.on_disk.count("U8"));
  EXPECT_EQ(s.on_disk.at("U8").tensors, 8);  // 2 layers × 2 stacks × (blocks, scales)
}

// A model loaded from MXFP4 is written back as transformers' save_pretrained writes the
// dequantized model: plain expert stacks in the saved dtype (here bf16, the source's: the
// dequantized values exactly) and no quantization_config; verify_export reloads it.
TEST(Mxfp4, ExportIsThePlainModelWithoutQuantizationConfig) {
  Transformer m = Transformer::load(fixture());
  const std::string out = test::fresh_output_dir("mxfp4_export");
  ExportOptions o;
  o.source_model_dir = fixture();
  o.dtype = DType::kBF16;
  export_hf_model(m, out, o);
  verify_export(m, out, DType::kBF16);
  const Json config = read_json_file(out + "/config.json", "test");
  EXPECT_FALSE(config.contains("quantization_config")) << config.dump();
  EXPECT_EQ(config["dtype"], "bfloat16");
  const SafetensorsFile saved = SafetensorsFile::open(out + "/model.safetensors");
  const SafetensorsFile expected = SafetensorsFile::open(fixture() + "/expected.safetensors");
  const SafetensorsFile source = SafetensorsFile::open(fixture() + "/model.safetensors");
  size_t plain = 0;
  for (const TensorEntry& e : source.entries()) {
    if (e.name.ends_with("_scales")) continue;
    const std::string name =
        e.name.ends_with("_blocks") ? e.name.substr(0, e.name.size() - 7) : e.name;
    ++plain;
    const TensorEntry* got = saved.find(name);
    ASSERT_TRUE(got) << name;
    EXPECT_EQ(got->dtype, DType::kBF16) << name;
    const TensorEntry* deq = expected.find("dequantized." + name);
    const Tensor want = deq ? expected.tensor(*deq) : source.tensor(e);
    const Tensor have = saved.tensor(*got);
    ASSERT_EQ(have.nbytes(), want.nbytes()) << name;
    EXPECT_EQ(std::memcmp(have.bytes(), want.bytes(), want.nbytes()), 0) << name;
  }
  EXPECT_EQ(saved.entries().size(), plain);
  // A base with this config is no 4-bit (QLoRA) base.
  EXPECT_FALSE(plan_from_model_config(read_json_file(fixture() + "/config.json", "test"), "c"));
  fs::remove_all(out);
}

// ---- Bad input: a copy of the fixture with one thing changed, refused before training. ----

struct BadFolder {
  std::string dir;
  std::string weights() const { return dir + "/model.safetensors"; }
};

// The fixture's tensors with `edit` applied (it may add, drop or replace entries), and its
// config.json with `edit_config` applied.
BadFolder bad_folder(const std::string& name,
                     const std::function<void(std::vector<NamedTensor>&)>& edit,
                     const std::function<void(Json&)>& edit_config = {}) {
  BadFolder f{test::fresh_output_dir("mxfp4_bad_" + name)};
  const SafetensorsFile source = SafetensorsFile::open(fixture() + "/model.safetensors");
  std::vector<NamedTensor> tensors;
  for (const TensorEntry& e : source.entries())
    tensors.push_back({e.name, source.tensor(e).clone()});
  edit(tensors);
  write_safetensors(f.weights(), tensors, {{"format", "pt"}});
  Json config = read_json_file(fixture() + "/config.json", "test");
  if (edit_config) edit_config(config);
  std::ofstream(f.dir + "/config.json") << config.dump(2);
  return f;
}

NamedTensor& named(std::vector<NamedTensor>& tensors, const std::string& name) {
  for (NamedTensor& t : tensors)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

std::string load_error(const std::string& dir) {
  try {
    Transformer::load(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const std::string kLayer0 = "model.layers.0.mlp.experts.";
const std::string kLayer1 = "model.layers.1.mlp.experts.";

TEST(Mxfp4Refuses, AMissingScalesTensor) {
  const BadFolder f = bad_folder("missing_scales", [](std::vector<NamedTensor>& t) {
    std::erase_if(t, [](const NamedTensor& n) { return n.name == kLayer1 + "down_proj_scales"; });
  });
  const std::string e = load_error(f.dir);
  EXPECT_NE(e.find(f.weights()), std::string::npos) << e;
  EXPECT_NE(e.find("'" + kLayer1 + "down_proj_blocks'"), std::string::npos) << e;
  EXPECT_NE(e.find("has no '" + kLayer1 + "down_proj_scales'"), std::string::npos) << e;
  // inspect reads the same view: the same refusal.
  EXPECT_THROW(summarize_model(f.dir), Error);
}

TEST(Mxfp4Refuses, ScalesThatDisagreeWithTheirBlocks) {
  const BadFolder f = bad_folder("scales_shape", [](std::vector<NamedTensor>& t) {
    named(t, kLayer0 + "gate_up_proj_scales").tensor = Tensor::zeros(DType::kU8, {3, 64, 2});
  });
  const std::string e = load_error(f.dir);
  EXPECT_NE(e.find(f.weights()), std::string::npos) << e;
  EXPECT_NE(e.find("tensor '" + kLayer0 + "gate_up_proj_scales'"), std::string::npos) << e;
  EXPECT_NE(e.find("does not match '" + kLayer0 + "gate_up_proj_blocks' [3, 64, 1, 16]"),
            std::string::npos)
      << e;
}

TEST(Mxfp4Refuses, BlocksThatDoNotEndInSixteenBytes) {
  const BadFolder f = bad_folder("blocks_width", [](std::vector<NamedTensor>& t) {
    named(t, kLayer0 + "down_proj_blocks").tensor = Tensor::zeros(DType::kU8, {3, 32, 2, 8});
    named(t, kLayer0 + "down_proj_scales").tensor = Tensor::zeros(DType::kU8, {3, 32, 2});
  });
  const std::string e = load_error(f.dir);
  EXPECT_NE(e.find("tensor '" + kLayer0 + "down_proj_blocks'"), std::string::npos) << e;
  EXPECT_NE(e.find("does not end in blocks of 16 bytes"), std::string::npos) << e;
}

// A consistent pair of the wrong size for config.json (another expert count here).
TEST(Mxfp4Refuses, APairThatDisagreesWithTheConfig) {
  const BadFolder f = bad_folder("pair_vs_config", [](std::vector<NamedTensor>& t) {
    named(t, kLayer1 + "gate_up_proj_blocks").tensor = Tensor::zeros(DType::kU8, {4, 64, 1, 16});
    named(t, kLayer1 + "gate_up_proj_scales").tensor = Tensor::zeros(DType::kU8, {4, 64, 1});
  });
  const std::string e = load_error(f.dir);
  EXPECT_NE(e.find(f.weights()), std::string::npos) << e;
  EXPECT_NE(e.find("wrong shape " + kLayer1 +
                   "gate_up_proj_blocks: checkpoint [4, 64, 1, 16], config implies [3, 64, 1, 16]"),
            std::string::npos)
      << e;
  // inspect reports it as a mismatch rather than failing.
  EXPECT_FALSE(summarize_model(f.dir).mismatch.ok());
}

TEST(Mxfp4Refuses, BlocksThatAreNotUint8) {
  const BadFolder f = bad_folder("dtype", [](std::vector<NamedTensor>& t) {
    named(t, kLayer0 + "down_proj_blocks").tensor = Tensor::zeros(DType::kI8, {3, 32, 1, 16});
  });
  const std::string e = load_error(f.dir);
  EXPECT_NE(e.find(f.weights()), std::string::npos) << e;
  EXPECT_NE(e.find("tensor '" + kLayer0 + "down_proj_blocks'"), std::string::npos) << e;
  EXPECT_NE(e.find("must be uint8 (U8), not I8"), std::string::npos) << e;
}

TEST(Mxfp4Refuses, AnotherQuantMethod) {
  const BadFolder f = bad_folder(
      "method", [](std::vector<NamedTensor>&) {},
      [](Json& c) { c["quantization_config"]["quant_method"] = "fp8"; });
  const std::string e = load_error(f.dir);
  EXPECT_NE(e.find(f.dir + "/config.json"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'quantization_config'"), std::string::npos) << e;
  EXPECT_NE(e.find("quant_method \"fp8\" is not one sft reads for gpt-oss"), std::string::npos)
      << e;
}

TEST(Mxfp4Refuses, WidthsThatAreNotWholeBlocks) {
  Json c = read_json_file(fixture() + "/config.json", "test");
  c["intermediate_size"] = 48;
  try {
    parse_model_config(c, "config.json");
    FAIL() << "accepted intermediate_size 48";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("config.json: key 'intermediate_size'"), std::string::npos) << m;
    EXPECT_NE(m.find("is 48, not a multiple of MXFP4's blocks of 32 values"), std::string::npos)
        << m;
  }
}

// Scale byte 255 (E8M0's NaN, 2^128 to transformers) makes inf of most codes; transformers would
// load them, sft names the block.
TEST(Mxfp4Refuses, ABlockThatDecodesToInf) {
  const BadFolder f = bad_folder("nan_scale", [](std::vector<NamedTensor>& t) {
    // gate_up_proj stored row 5 of expert 2 = the up projection's row 2 in sft's stack.
    named(t, kLayer0 + "gate_up_proj_scales").tensor.mutable_values<uint8_t>()[2 * 64 + 5] = 255;
  });
  const std::string e = load_error(f.dir);
  EXPECT_NE(e.find(f.weights()), std::string::npos) << e;
  EXPECT_NE(e.find("tensor '" + kLayer0 + "gate_up_proj_blocks', expert 2, row 5, block 0"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("scale byte 255 is 2^128, E8M0's NaN"), std::string::npos) << e;
}

}  // namespace
}  // namespace sft::model
