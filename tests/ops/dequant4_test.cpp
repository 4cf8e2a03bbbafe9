// ops/cpu/dequant4.h: the AVX-512 dequantization equals the scalar one bit for bit, f32 and
// bf16, for every run shape the panels of matmul_4bit can ask for and more (odd starts, runs
// inside one block, across many, ending mid-block; block sizes that are and are not multiples
// of 16 or even), on every byte value and on absmax that are subnormal, zero, infinite or NaN;
// and the dispatching entry point on bitsandbytes' own dequantized weights (the goldens of
// bnb_quant_test). The AVX-512 comparisons are skipped where the CPU (or SFT_CPU_ISA=generic)
// rules AVX-512 out.
#include "ops/cpu/dequant4.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "io/safetensors.h"
#include "ops/cpu/bnb_quant.h"
#include "ops/cpu/cpu_features.h"
#include "test_paths.h"

namespace sft::ops::cpu {
namespace {

uint32_t bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}
uint32_t bits(uint16_t x) {
  return x;
}

struct Tensor {
  std::vector<uint8_t> packed;
  std::vector<float> absmax;
  int64_t blocksize;
  Packed4 view(Quant4Type type) const {
    return {packed.data(), absmax.data(), quant4_code(type).data(), blocksize};
  }
};

// Every byte value, in a shuffled order; absmax mostly ordinary, with the awkward values
// spread through.
Tensor random_tensor(int64_t n, int64_t blocksize, uint32_t seed) {
  std::mt19937 rng(seed);
  Tensor t{std::vector<uint8_t>(static_cast<size_t>((n + 1) / 2)),
           std::vector<float>(static_cast<size_t>(quant_block_count(n, blocksize))), blocksize};
  for (size_t i = 0; i < t.packed.size(); ++i) t.packed[i] = static_cast<uint8_t>(i * 97 + seed);
  std::uniform_real_distribution<float> scale(1e-4f, 3.0f);
  const float awkward[] = {0.0f,
                           std::numeric_limits<float>::denorm_min(),
                           1e-39f,
                           std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(),
                           3.0e38f};
  for (size_t b = 0; b < t.absmax.size(); ++b)
    t.absmax[b] = b % 7 == 3 ? awkward[(b / 7) % std::size(awkward)] : scale(rng);
  return t;
}

template <typename T>
void expect_same(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int shown = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (bits(got[i]) != bits(want[i]) && shown++ < 5)
      ADD_FAILURE() << what << " [" << i << "]: " << std::hex << bits(got[i]) << " vs "
                    << bits(want[i]);
}

// Both paths of one output type over one run; the guard values past the end must stay.
template <typename T>
void compare_run(const Packed4& w, int64_t first, int64_t n, const std::string& what) {
  const T guard = T(77);
  std::vector<T> fast(static_cast<size_t>(n + 3), guard), slow(static_cast<size_t>(n + 3), guard);
  dequantize4_avx512(w, first, n, fast.data());
  dequantize4_scalar(w, first, n, slow.data());
  expect_same(fast, slow, what);
  for (int64_t j = n; j < n + 3; ++j)
    EXPECT_EQ(bits(fast[static_cast<size_t>(j)]), bits(guard)) << what << " wrote past the run";
}

TEST(Dequant4, Avx512EqualsScalarBitForBit) {
  if (!use_avx512()) GTEST_SKIP() << "no AVX-512 here (or SFT_CPU_ISA=generic)";
  const int64_t total = 5000;
  for (int64_t blocksize : {64, 16, 32, 128, 4096, 7, 24, 65}) {
    const Tensor t = random_tensor(total, blocksize, static_cast<uint32_t>(blocksize));
    for (Quant4Type type : {Quant4Type::kNf4, Quant4Type::kFp4})
      for (int64_t first : {0, 1, 2, 15, 16, 33, 63, 64, 65, 127, 130, 1001})
        for (int64_t n : {0, 1, 2, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 200, 1999, 3999}) {
          if (first + n > total) continue;
          const std::string what = "blocksize " + std::to_string(blocksize) + " type " +
                                   std::string(quant4_type_name(type)) + " first " +
                                   std::to_string(first) + " n " + std::to_string(n);
          compare_run<float>(t.view(type), first, n, what + " f32");
          compare_run<uint16_t>(t.view(type), first, n, what + " bf16");
        }
  }
}

TEST(Dequant4, ScalarIsTheFormatsElementRoundedAsF32ToBf16) {
  // The scalar path, independent of the vector one: quant4_element in f32, rounded once.
  const Tensor t = random_tensor(301, 64, 5);
  const Packed4 w = t.view(Quant4Type::kNf4);
  std::vector<float> f(300);
  std::vector<uint16_t> h(300);
  dequantize4(w, 1, 300, f.data());
  dequantize4(w, 1, 300, h.data());
  for (int64_t j = 0; j < 300; ++j) {
    const uint8_t byte = t.packed[static_cast<size_t>((j + 1) / 2)];
    const int index = (j + 1) % 2 == 0 ? byte >> 4 : byte & 0xF;
    const float want = quant4_code(Quant4Type::kNf4)[static_cast<size_t>(index)] *
                       t.absmax[static_cast<size_t>((j + 1) / 64)];
    EXPECT_EQ(bits(f[static_cast<size_t>(j)]), bits(want)) << j;
    EXPECT_EQ(h[static_cast<size_t>(j)], f32_to_bf16(want)) << j;
  }
}

TEST(Dequant4, DispatchEqualsBitsandbytesOnItsGoldens) {
  // tests/fixtures/bnb4 (tools/make_bnb4_goldens.py): bitsandbytes' packed bytes, absmax and
  // its own dequantized f32 weight; the run split at odd places so every path shape is used.
  const SafetensorsFile file =
      SafetensorsFile::open(test::source_path("tests/fixtures/bnb4/bnb4.safetensors"));
  for (const char* name : {"nf4_plain", "fp4_plain", "nf4_tail"}) {
    const std::string p = std::string(name) + ".";
    const Quant4Type type = p[0] == 'n' ? Quant4Type::kNf4 : Quant4Type::kFp4;
    const auto packed = file.tensor(p + "packed").values<uint8_t>();
    const std::vector<float> absmax = file.tensor(p + "absmax").to_f32_vector();
    const std::vector<float> want = file.tensor(p + "dequantized").to_f32_vector();
    const Packed4 w{packed.data(), absmax.data(), quant4_code(type).data(), 64};
    const auto n = static_cast<int64_t>(want.size());
    std::vector<float> got(want.size());
    for (int64_t begin = 0, step = 1; begin < n; begin += step, step = step * 3 + 1)
      dequantize4(w, begin, std::min(step, n - begin), got.data() + begin);
    expect_same(got, want, name);
  }
}

}  // namespace
}  // namespace sft::ops::cpu
