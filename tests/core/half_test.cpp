// bf16/f16/f8 conversions against independent oracles: the CPU's F16C conversion
// instructions (IEEE round-to-nearest-even in hardware) and, for bf16, a slow
// nearest-value search in double precision.
#include "core/half.h"

#include <cpuid.h>
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/rng.h"

namespace sft {

namespace {

__attribute__((target("f16c"))) f16_bits hardware_f32_to_f16(float f) {
  return static_cast<f16_bits>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float hardware_f16_to_f32(f16_bits h) {
  return _cvtsh_ss(h);
}

bool have_f16c() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;  // CPUID.1:ECX.F16C
}

// Nearest bf16 by brute force: compare the two bf16 neighbours in double, ties to even.
bf16_bits reference_f32_to_bf16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<bf16_bits>((bits >> 16) | 0x40);
  uint16_t lo = static_cast<uint16_t>(bits >> 16);  // truncation toward zero
  if ((bits & 0xffffu) == 0) return lo;
  uint16_t hi = static_cast<uint16_t>(lo + 1);  // next away from zero (may be inf)
  double x = std::fabs(static_cast<double>(f));
  double dlo = x - std::fabs(static_cast<double>(bf16_to_f32(lo)));
  double dhi = std::fabs(static_cast<double>(bf16_to_f32(hi))) - x;
  if (std::isinf(bf16_to_f32(hi))) {
    // The rounding boundary to infinity is max + half an ulp, as for finite neighbours.
    dhi = std::ldexp(1.0, 128) - x;
  }
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1) ? hi : lo;
}

std::vector<float> edge_floats() {
  return {0.0f,         -0.0f,         1.0f,           -1.0f,    65504.0f,        65520.0f,
          65519.99f,    65536.0f,      1e-8f,          5.96e-8f, 2.98e-8f,        6.1e-5f,
          6.097555e-5f, 3.4028235e38f, -3.4028235e38f, 1e-45f,   1.17549435e-38f, INFINITY,
          -INFINITY,    NAN,           -NAN,           0.1f,     1.00390625f,     1.005859375f,
          3.0e38f,      3.3961776e38f, 3.3961778e38f};
}

}  // namespace

TEST(Half, F16ToF32IsExactForAllBitPatterns) {
  if (!have_f16c()) GTEST_SKIP() << "this CPU has no F16C instructions to compare with";
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<f16_bits>(h);
    float ours = f16_to_f32(bits);
    float ref = hardware_f16_to_f32(bits);
    if (std::isnan(ref)) {
      ASSERT_TRUE(std::isnan(ours)) << std::hex << h;
      ASSERT_EQ(std::signbit(ours), std::signbit(ref));
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(ours), std::bit_cast<uint32_t>(ref)) << std::hex << h;
    ASSERT_EQ(f32_to_f16(ours), bits) << std::hex << h;  // round trip
  }
}

TEST(Half, F32ToF16MatchesHardwareRounding) {
  if (!have_f16c()) GTEST_SKIP() << "this CPU has no F16C instructions to compare with";
  std::vector<float> inputs = edge_floats();
  Rng rng(7);
  for (int i = 0; i < 2'000'000; ++i) inputs.push_back(std::bit_cast<float>(rng.next_u32()));
  // Dense sweep around the subnormal/normal boundary and the overflow threshold.
  for (uint32_t b = 0x33000000u; b < 0x33000000u + 100000; ++b)
    inputs.push_back(std::bit_cast<float>(b));
  for (uint32_t b = 0x387fc000u; b < 0x38804000u; ++b) inputs.push_back(std::bit_cast<float>(b));
  for (uint32_t b = 0x477fe000u; b < 0x47801000u; ++b) inputs.push_back(std::bit_cast<float>(b));
  for (float f : inputs) {
    f16_bits ours = f32_to_f16(f);
    f16_bits ref_bits = hardware_f32_to_f16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE((ours & 0x7c00u) == 0x7c00u && (ours & 0x3ffu) != 0) << f;
      ASSERT_EQ(ours & 0x8000u, ref_bits & 0x8000u);
      continue;
    }
    ASSERT_EQ(ours, ref_bits) << std::hexfloat << f;
  }
}

TEST(Half, BF16RoundsToNearestEven) {
  std::vector<float> inputs = edge_floats();
  Rng rng(11);
  for (int i = 0; i < 2'000'000; ++i) inputs.push_back(std::bit_cast<float>(rng.next_u32()));
  for (uint32_t b = 0x3f800000u; b < 0x3f800000u + 300000; ++b)
    inputs.push_back(std::bit_cast<float>(b));
  for (uint32_t b = 0x7f7f0000u; b < 0x7f800000u; ++b) inputs.push_back(std::bit_cast<float>(b));
  for (float f : inputs) ASSERT_EQ(f32_to_bf16(f), reference_f32_to_bf16(f)) << std::hexfloat << f;
  // Round trip of every bf16 that is not NaN.
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = bf16_to_f32(static_cast<bf16_bits>(h));
    if (!std::isnan(f)) ASSERT_EQ(f32_to_bf16(f), h);
  }
}

TEST(Half, SpecialValuesArePreserved) {
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x7f800001u)) & 0x7fc0,
            0x7fc0);                              // signalling NaN is quieted, not inf
  EXPECT_EQ(f32_to_bf16(3.4028235e38f), 0x7f80);  // f32 max rounds up past bf16 max
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(std::bit_cast<float>(0x7f800001u)) & 0x7e00, 0x7e00);
}

TEST(Half, Float8Decoding) {
  EXPECT_EQ(f8e4m3_to_f32(0x38), 1.0f);
  EXPECT_EQ(f8e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(f8e4m3_to_f32(0xfe), -448.0f);
  EXPECT_EQ(f8e4m3_to_f32(0x01), 0x1p-9f);
  EXPECT_EQ(f8e4m3_to_f32(0x08), 0x1p-6f);
  EXPECT_TRUE(std::isnan(f8e4m3_to_f32(0x7f)));
  EXPECT_TRUE(std::isnan(f8e4m3_to_f32(0xff)));
  EXPECT_EQ(f8e5m2_to_f32(0x3c), 1.0f);
  EXPECT_EQ(f8e5m2_to_f32(0x7b), 57344.0f);
  EXPECT_TRUE(std::isinf(f8e5m2_to_f32(0x7c)));
  EXPECT_EQ(f8e5m2_to_f32(0x01), 0x1p-16f);
  // Monotone over the positive finite codes: decoding is a strictly increasing map.
  for (int v = 1; v < 0x7f; ++v)
    EXPECT_LT(f8e4m3_to_f32(uint8_t(v - 1)), f8e4m3_to_f32(uint8_t(v)));
}

}  // namespace sft
