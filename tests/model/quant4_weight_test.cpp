// bitsandbytes 4-bit checkpoints: tests/fixtures/bnb4/qwen3_{nf4_nested,fp4}, the tiny Qwen3
// fixture loaded by transformers with load_in_4bit and saved (tools/make_bnb4_goldens.py).
// Every 4-bit weight read back and dequantized equals bitsandbytes' dequantization bit for
// bit, and quantizing the original f32 weights here gives the bytes transformers stored.
#include "model/quant4_weight.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "error_of.h"
#include "test_paths.h"

namespace sft::model {
namespace {

using ops::cpu::NestedAbsmax;
using ops::cpu::Quant4Type;

std::string fixture(const std::string& name) {
  return test::source_path("tests/fixtures/bnb4/" + name);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

using test::error_of;

class Quant4Checkpoint : public ::testing::TestWithParam<const char*> {};

TEST_P(Quant4Checkpoint, EveryWeightDequantizesAsBitsandbytes) {
  const SafetensorsFile model = SafetensorsFile::open(fixture(GetParam()) + "/model.safetensors");
  const SafetensorsFile reference =
      SafetensorsFile::open(fixture(GetParam()) + "/reference.safetensors");
  ASSERT_EQ(reference.entries().size(), 14u);  // 7 projections × 2 layers
  for (const TensorEntry& e : reference.entries()) {
    ASSERT_TRUE(is_quant4_weight(model, e.name)) << e.name;
    const Quant4Weight w = read_quant4_weight(model, e.name);
    EXPECT_EQ(w.state.shape, (std::vector<int64_t>(e.shape.begin(), e.shape.end()))) << e.name;
    EXPECT_EQ(w.state.dtype, "float32") << e.name;
    EXPECT_TRUE(same_bits(w.dequantize(), reference.tensor(e).to_f32_vector())) << e.name;
  }
  EXPECT_FALSE(is_quant4_weight(model, "model.layers.0.input_layernorm.weight"));
  EXPECT_FALSE(is_quant4_weight(model, "model.embed_tokens.weight"));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Quant4Checkpoint,
                         ::testing::Values("qwen3_nf4_nested", "qwen3_fp4"));

TEST(Quant4Checkpoint, QuantizingTheF32WeightsGivesTheStoredBytes) {
  const SafetensorsFile original =
      SafetensorsFile::open(test::source_path("tests/fixtures/models/qwen3/model.safetensors"));
  for (const char* name : {"qwen3_nf4_nested", "qwen3_fp4"}) {
    const SafetensorsFile model = SafetensorsFile::open(fixture(name) + "/model.safetensors");
    const SafetensorsFile reference =
        SafetensorsFile::open(fixture(name) + "/reference.safetensors");
    for (const TensorEntry& e : reference.entries()) {
      const Quant4Weight stored = read_quant4_weight(model, e.name);
      const std::vector<float> x = original.tensor(e.name).to_f32_vector();
      std::vector<uint8_t> packed((x.size() + 1) / 2);
      std::vector<float> absmax(static_cast<size_t>(
          ops::cpu::quant_block_count(static_cast<int64_t>(x.size()), stored.state.blocksize)));
      ops::cpu::quantize_4bit(x, stored.state.blocksize, stored.state.type, packed, absmax);
      EXPECT_EQ(packed, stored.packed) << name << " " << e.name;
      if (stored.state.nested) {
        // torch's float32 mean sums in its own order: one ulp from the exact mean at most.
        const float offset = stored.state.nested_offset;
        EXPECT_LE(std::fabs(ops::cpu::absmax_mean(absmax) - offset),
                  std::nextafter(offset, INFINITY) - offset)
            << name << " " << e.name;
        const NestedAbsmax nested = ops::cpu::nest_absmax(absmax, offset);
        ops::cpu::unnest_absmax(nested, absmax);
      }
      EXPECT_TRUE(same_bits(absmax, stored.absmax)) << name << " " << e.name;
    }
  }
}

TEST(Quant4State, ParsesWhatTransformersWrites) {
  const Quant4State s = parse_quant4_state(
      R"({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [64, 128],)"
      R"( "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": 2.5})",
      "f: tensor 't'");
  EXPECT_EQ(s.type, Quant4Type::kNf4);
  EXPECT_EQ(s.blocksize, 64);
  EXPECT_EQ(s.dtype, "bfloat16");
  EXPECT_EQ(s.shape, (std::vector<int64_t>{64, 128}));
  EXPECT_TRUE(s.nested);
  EXPECT_EQ(s.nested_blocksize, 256);
  EXPECT_EQ(s.nested_offset, 2.5f);
  EXPECT_FALSE(
      parse_quant4_state(
          R"({"quant_type": "fp4", "blocksize": 64, "dtype": "float32", "shape": [2, 2]})", "f")
          .nested);
}

TEST(Quant4State, BadStatesAreRefusedNamingTheField) {
  const std::string ok_tail = R"(, "blocksize": 64, "dtype": "float32", "shape": [2, 2]})";
  const struct {
    std::string json;
    std::string message;
  } cases[] = {
      {"[1]", "quant_state must be a JSON object"},
      {"{", "[quant] f.safetensors: tensor 'w'"},
      {R"({"quant_type": "int4")" + ok_tail, "quant_type 'int4' is not a 4-bit type"},
      {R"({"quant_type": "nf4", "blocksize": 0, "dtype": "float32", "shape": [2, 2]})",
       "\"blocksize\" must be a positive integer"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "int8", "shape": [2, 2]})",
       "dtype 'int8'"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [4]})",
       "[out_features, in_features]"},
      {R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [2, -1]})",
       "not a positive dimension"},
      {R"({"quant_type": "nf4", "nested_offset": 1.0)" + ok_tail, "\"nested_blocksize\""},
  };
  for (const auto& c : cases) {
    const std::string msg =
        error_of([&] { parse_quant4_state(c.json, "f.safetensors: tensor 'w'"); });
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.json << " → " << msg;
  }
}

// A copy of one fixture weight's tensors with one of them replaced, written to a fresh file.
std::string with_tensor(const std::string& weight, const std::string& replaced, Tensor tensor) {
  const SafetensorsFile model =
      SafetensorsFile::open(fixture("qwen3_nf4_nested") + "/model.safetensors");
  std::vector<NamedTensor> tensors;
  for (const TensorEntry& e : model.entries()) {
    if (e.name.rfind(weight, 0) != 0) continue;
    tensors.push_back({e.name, e.name == replaced ? tensor : model.tensor(e).clone()});
  }
  const std::string path = test::fresh_output_dir("quant4_bad") + "/model.safetensors";
  write_safetensors(path, tensors);
  return path;
}

TEST(Quant4Checkpoint, PiecesThatDisagreeAreRefusedNamingTheTensor) {
  const std::string w = "model.layers.0.mlp.up_proj.weight";
  const std::string short_packed = with_tensor(w, w, Tensor::zeros(DType::kU8, {100, 1}));
  EXPECT_NE(error_of([&] {
              read_quant4_weight(SafetensorsFile::open(short_packed), w);
            }).find("tensor '" + w + "': holds 100 bytes; a 128 × 64 weight packs into 4096"),
            std::string::npos);
  const std::string bad_map = with_tensor(w, w + ".quant_map", Tensor::zeros(DType::kF32, {16}));
  EXPECT_NE(error_of([&] {
              read_quant4_weight(SafetensorsFile::open(bad_map), w);
            }).find("its quant_map is not bitsandbytes' nf4 table"),
            std::string::npos);
  const std::string short_absmax = with_tensor(w, w + ".absmax", Tensor::zeros(DType::kU8, {3}));
  EXPECT_NE(error_of([&] {
              read_quant4_weight(SafetensorsFile::open(short_absmax), w);
            }).find("nested statistics need 128 uint8 absmax codes, got 3"),
            std::string::npos);
}

}  // namespace
}  // namespace sft::model
