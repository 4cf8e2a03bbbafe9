// bitsandbytes' 4-bit format against bitsandbytes 0.50 itself: tests/fixtures/bnb4, written by
// tools/make_bnb4_goldens.py (quantize_4bit on the CPU, blocksize 64, as transformers'
// load_in_4bit). Packed bytes and absmax must be equal, not close: a checkpoint sft quantizes
// must be the one bitsandbytes would have written.
#include "ops/cpu/bnb_quant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/safetensors.h"
#include "test_paths.h"

namespace sft::ops::cpu {
namespace {

const SafetensorsFile& goldens() {
  static const SafetensorsFile file =
      SafetensorsFile::open(test::source_path("tests/fixtures/bnb4/bnb4.safetensors"));
  return file;
}

std::vector<float> floats(const std::string& name) {
  return goldens().tensor(name).to_f32_vector();
}

std::vector<uint8_t> bytes(const std::string& name) {
  const auto v = goldens().tensor(name).values<uint8_t>();
  return {v.begin(), v.end()};
}

// Bit equality of floats, so a -0 / +0 or a last-bit difference shows.
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int shown = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    if (a != b && shown++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " vs " << want[i];
  }
}

struct Case {
  const char* name;
  Quant4Type type;
  bool nested;
};

class Bnb4Golden : public ::testing::TestWithParam<Case> {};

TEST_P(Bnb4Golden, PacksAndDequantizesAsBitsandbytes) {
  const Case c = GetParam();
  const std::string p = std::string(c.name) + ".";
  const std::vector<float> x = floats(p + "input");
  const auto blocks = static_cast<size_t>(quant_block_count(static_cast<int64_t>(x.size()), 64));
  std::vector<uint8_t> packed((x.size() + 1) / 2);
  std::vector<float> absmax(blocks);
  quantize_4bit(x, 64, c.type, packed, absmax);
  EXPECT_EQ(packed, bytes(p + "packed"));
  expect_same_bits(std::vector<float>(quant4_code(c.type).begin(), quant4_code(c.type).end()),
                   floats(p + "quant_map"), p + "quant_map");

  if (c.nested) {
    // bitsandbytes' offset is torch's float32 mean (its own summation order): the exact mean
    // is within one ulp of it, and from that offset the codes are bitsandbytes' exactly.
    const float offset = floats(p + "offset")[0];
    EXPECT_LE(std::fabs(absmax_mean(absmax) - offset), std::nextafter(offset, INFINITY) - offset);
    const NestedAbsmax nested = nest_absmax(absmax, offset);
    EXPECT_EQ(nested.codes, bytes(p + "absmax"));
    expect_same_bits(nested.absmax, floats(p + "nested_absmax"), p + "nested_absmax");
    expect_same_bits(std::vector<float>(nested.code.begin(), nested.code.end()),
                     floats(p + "nested_quant_map"), p + "nested_quant_map");
    unnest_absmax(nested, absmax);
  } else {
    expect_same_bits(absmax, floats(p + "absmax"), p + "absmax");
  }
  std::vector<float> out(x.size());
  dequantize_4bit(packed, absmax, 64, c.type, out);
  expect_same_bits(out, floats(p + "dequantized"), p + "dequantized");
}

INSTANTIATE_TEST_SUITE_P(Cases, Bnb4Golden,
                         ::testing::Values(Case{"nf4_plain", Quant4Type::kNf4, false},
                                           Case{"fp4_plain", Quant4Type::kFp4, false},
                                           Case{"nf4_nested", Quant4Type::kNf4, true},
                                           Case{"fp4_nested", Quant4Type::kFp4, true},
                                           Case{"nf4_tail", Quant4Type::kNf4, false},
                                           Case{"fp4_tail", Quant4Type::kFp4, true},
                                           Case{"nf4_nested_large", Quant4Type::kNf4, true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Bnb4, SignedDynamicMapIsBitsandbytes) {
  const auto& map = signed_dynamic_map();
  expect_same_bits(std::vector<float>(map.begin(), map.end()), floats("dynamic_map"),
                   "dynamic_map");
}

TEST(Bnb4, CodeValuesOnMidpointsGoToTheLowerBucket) {
  // One block whose absmax is 1: each value is exactly a code value or a midpoint.
  const auto& code = quant4_code(Quant4Type::kNf4);
  std::vector<float> x = {1.0f, code[8], (code[8] + code[9]) / 2, (code[7] + code[8]) / 2};
  std::vector<uint8_t> packed(2);
  std::vector<float> absmax(1);
  quantize_4bit(x, 64, Quant4Type::kNf4, packed, absmax);
  EXPECT_EQ(packed[0], (15 << 4) | 8);
  EXPECT_EQ(packed[1], (8 << 4) | 7);
}

TEST(Bnb4, ATensorQuantizesAsItsBlocksOneByOne) {
  // quantize_4bit spreads a tensor's blocks over the pool: the result must be each block
  // quantized on its own (one block a call, one thread), bytes and absmax, short last block too.
  const int64_t n = 64 * 3001 + 38;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    x[static_cast<size_t>(i)] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + float(i % 97));
  std::vector<uint8_t> packed(static_cast<size_t>((n + 1) / 2)), one(packed.size());
  std::vector<float> absmax(static_cast<size_t>(quant_block_count(n, 64))),
      one_absmax(absmax.size());
  quantize_4bit(x, 64, Quant4Type::kFp4, packed, absmax);
  for (int64_t begin = 0; begin < n; begin += 64) {
    const auto len = static_cast<size_t>(std::min<int64_t>(64, n - begin));
    quantize_4bit(std::span<const float>(x).subspan(static_cast<size_t>(begin), len), 64,
                  Quant4Type::kFp4,
                  std::span<uint8_t>(one).subspan(static_cast<size_t>(begin / 2), (len + 1) / 2),
                  std::span<float>(one_absmax).subspan(static_cast<size_t>(begin / 64), 1));
  }
  EXPECT_EQ(packed, one);
  expect_same_bits(absmax, one_absmax, "absmax");
}

TEST(Bnb4, WrongSizesAreRefusedNamingTheBuffer) {
  std::vector<float> x(100);
  std::vector<uint8_t> packed(50);
  std::vector<float> absmax(1);  // 100 elements in blocks of 64 need 2
  try {
    quantize_4bit(x, 64, Quant4Type::kNf4, packed, absmax);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("absmax holds 1 values, the format needs 2"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace sft::ops::cpu
