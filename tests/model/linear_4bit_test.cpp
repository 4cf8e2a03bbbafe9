// Linear over a 4-bit base (Parameter::quant4, QLoRA): forward and the input gradient equal
// the same Linear over the dequantized weight (f32, and bf16 inputs against its bf16 copy),
// the base gets no gradient, its bf16 output is the f32 one rounded, and what cannot take a
// 4-bit weight (or a bf16 output) refuses naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "error_of.h"
#include "model/linear.h"
#include "ops/cpu/bnb_quant.h"

namespace sft::model {
namespace {

using test::error_of;

std::vector<float> random_floats(int64_t n, uint64_t stream, float scale) {
  Rng rng(5, stream);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = scale * rng.normal();
  return v;
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, mag = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, double(std::abs(a[i] - b[i])));
    mag = std::max(mag, double(std::abs(b[i])));
  }
  return diff / mag;
}

// One (O, I) weight both ways: 4-bit, and dense (the dequantized values, their bf16 copy).
struct Weights {
  static constexpr int64_t O = 300, I = 1024;  // panels of 256 rows: two, the last short
  std::vector<uint8_t> packed = std::vector<uint8_t>(O * I / 2);
  std::vector<float> absmax = std::vector<float>(O * I / 64);
  std::vector<float> dense = std::vector<float>(O * I);
  std::vector<uint16_t> dense_bf16 = std::vector<uint16_t>(O * I);
  Parameter quantized, plain;

  Weights() {
    const std::vector<float> w = random_floats(O * I, 1, 0.05f);
    ops::cpu::quantize_4bit(w, 64, ops::Quant4Type::kNf4, packed, absmax);
    ops::cpu::dequantize_4bit(packed, absmax, 64, ops::Quant4Type::kNf4, dense);
    std::transform(dense.begin(), dense.end(), dense_bf16.begin(), f32_to_bf16);
    quantized.spec.name = plain.spec.name = "model.layers.0.mlp.up_proj.weight";
    quantized.quant4 = {ops::view_of(packed.data(), 1, O * I / 2),
                        ops::view_of(absmax.data(), 1, O * I / 64),
                        O,
                        I,
                        64,
                        ops::Quant4Type::kNf4};
    plain.value = ops::view_of(dense.data(), O, I);
    plain.bf16 = ops::view_of(dense_bf16.data(), O, I);
  }
};

TEST(Linear4Bit, MatchesTheDequantizedWeightForwardAndBackward) {
  const Weights w;
  const int64_t N = 7, O = Weights::O, I = Weights::I;
  for (bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "f32");
    std::vector<float> x = random_floats(N * I, 2, 1.0f);
    std::vector<uint16_t> x16(x.size());
    std::transform(x.begin(), x.end(), x16.begin(), f32_to_bf16);
    const ops::View xv = bf16 ? ops::view_of(x16.data(), N, I) : ops::view_of(x.data(), N, I);
    const std::vector<float> dy = random_floats(N * O, 3, 1.0f);
    std::vector<float> y4(N * O), y(N * O), dx4(N * I), dx(N * I);
    std::vector<uint16_t> dy16(N * O);
    const Linear quantized{&w.quantized}, plain{&w.plain};
    quantized.forward(ops::view_of(y4.data(), N, O), xv);
    plain.forward(ops::view_of(y.data(), N, O), xv);
    EXPECT_LT(relative_error(y4, y), 1e-6);
    quantized.backward(ops::view_of(dx4.data(), N, I), ops::view_of(dy.data(), N, O), xv,
                       ops::view_of(dy16.data(), N, O));
    plain.backward(ops::view_of(dx.data(), N, I), ops::view_of(dy.data(), N, O), xv,
                   ops::view_of(dy16.data(), N, O));
    EXPECT_LT(relative_error(dx4, dx), 1e-6);  // panels sum in another order
  }
}

// Under bf16 a 4-bit base with nothing after its product writes the rounded output itself:
// bit for bit the f32 output cast; a dense Linear (ops::matmul's f32 c) or one with a bias
// (added after the product) refuses a bf16 y, naming the weight.
TEST(Linear4Bit, WritesItsRoundedOutputOnlyWhenNothingFollowsTheProduct) {
  const Weights w;
  const int64_t N = 37, O = Weights::O, I = Weights::I;
  std::vector<uint16_t> x16(N * I);
  const std::vector<float> x = random_floats(N * I, 4, 1.0f);
  std::transform(x.begin(), x.end(), x16.begin(), f32_to_bf16);
  const ops::View xv = ops::view_of(x16.data(), N, I);
  const Linear quantized{&w.quantized}, plain{&w.plain};
  ASSERT_TRUE(quantized.writes_rounded_output());
  std::vector<float> y(N * O);
  std::vector<uint16_t> expected(N * O), y16(N * O);
  quantized.forward(ops::view_of(y.data(), N, O), xv);
  std::transform(y.begin(), y.end(), expected.begin(), f32_to_bf16);
  quantized.forward(ops::view_of(y16.data(), N, O), xv);
  EXPECT_EQ(y16, expected);

  EXPECT_FALSE(plain.writes_rounded_output());
  EXPECT_NE(error_of([&] {
              plain.forward(ops::view_of(y16.data(), N, O), xv);
            }).find("[model] 'model.layers.0.mlp.up_proj.weight' got a bf16 output"),
            std::string::npos);
  std::vector<float> b(O);
  Parameter bias;
  bias.value = ops::view_of(b.data(), 1, O);
  const Linear biased{&w.quantized, &bias};
  EXPECT_FALSE(biased.writes_rounded_output());
  EXPECT_NE(error_of([&] {
              biased.forward(ops::view_of(y16.data(), N, O), xv);
            }).find("only a 4-bit base without bias or output sum rounds its own product"),
            std::string::npos);
}

TEST(Linear4Bit, WhatCannotTakeA4BitBaseRefusesNamingIt) {
  const Weights w;
  const Linear quantized{&w.quantized};
  std::vector<float> merged(Weights::O * Weights::I);
  EXPECT_NE(error_of([&] {
              quantized.merged_weight(ops::view_of(merged.data(), Weights::O, Weights::I));
            }).find("'model.layers.0.mlp.up_proj.weight' is a 4-bit base"),
            std::string::npos);
  EXPECT_FALSE(StackedLinear::of({&quantized, &quantized}).has_value());
}

}  // namespace
}  // namespace sft::model
