// The choice between oneDNN's bf16 kernels and fp32 GEMMs on widened bf16 operands
// (ops/cpu/bf16_matmul_path.h), and that both paths give the products of bf16 values.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/rng.h"
#include "ops/cpu/amx.h"
#include "ops/cpu/bf16_matmul_path.h"
#include "ops/cpu/cpu_features.h"
#include "ops/matmul_path.h"
#include "ops/ops.h"

namespace sft::ops::cpu {
namespace {

TEST(Bf16MatmulPath, AmxAndAmdRunNativeOtherCpusWiden) {
  EXPECT_EQ(choose_bf16_matmul("", "brg:avx512_core_amx_bf16", false).path,
            Bf16MatmulPath::kNative);
  EXPECT_EQ(choose_bf16_matmul("", "brg:avx512_core_bf16", true).path, Bf16MatmulPath::kNative);
  const Bf16MatmulChoice intel = choose_bf16_matmul("", "brg:avx512_core_bf16", false);
  EXPECT_EQ(intel.path, Bf16MatmulPath::kWidened);
  EXPECT_NE(intel.why.find("no AMX"), std::string::npos) << intel.why;
  const Bf16MatmulChoice avx2 = choose_bf16_matmul("", "none", true);
  EXPECT_EQ(avx2.path, Bf16MatmulPath::kWidened);
  EXPECT_NE(avx2.why.find("no bf16 matmul instructions"), std::string::npos) << avx2.why;
}

TEST(Bf16MatmulPath, TheVariableOverridesAndBadValuesAreRefused) {
  EXPECT_EQ(choose_bf16_matmul("widened", "brg:avx512_core_amx_bf16", false).path,
            Bf16MatmulPath::kWidened);
  EXPECT_EQ(choose_bf16_matmul("native", "brg:avx512_core_bf16", false).path,
            Bf16MatmulPath::kNative);
  try {
    choose_bf16_matmul("native", "none", false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SFT_BF16_MATMUL=widened"), std::string::npos);
  }
  try {
    choose_bf16_matmul("fast", "none", false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SFT_BF16_MATMUL='fast'"), std::string::npos);
  }
}

TEST(Bf16MatmulPath, ThisProcessSaysWhatRunsAndWhy) {
  const std::string line = matmul_bf16_path();
  EXPECT_NE(line.find(" ("), std::string::npos) << line;
  EXPECT_EQ(line.back(), ')') << line;
}

// The attention's line names the tile product this CPU got: AMX, the widened register blocks
// under ONEDNN_MAX_CPU_ISA (ctest ops.bf16_no_amx) or without AMX, the portable loop under
// SFT_CPU_ISA=generic.
TEST(Bf16MatmulPath, TheAttentionLineNamesItsTileProduct) {
  const std::string line = attention_bf16_path();
  const char* expected = use_amx()      ? "AMX tiles"
                         : use_avx512() ? "fp32 register blocks"
                                        : "portable loop";
  EXPECT_EQ(line.rfind(expected, 0), 0u) << line;
  EXPECT_EQ(line.back(), ')') << line;
}

// Whichever path this process took (ctest runs this binary with both, see tests/CMakeLists.txt):
// products of bf16 values summed in fp32, against an fp64 sum of the same products; every
// transpose and stride, and a wide transposed B that the widened path splits into panels.
TEST(Bf16MatmulPath, EitherPathMultipliesTheBf16Values) {
  struct Case {
    int64_t M, N, K;
    bool ta, tb;
  };
  for (const Case& c :
       {Case{7, 9, 33, false, false}, Case{5, 17, 64, true, false}, Case{3, 11, 20, false, true},
        Case{4, 6, 9, true, true}, Case{2, 4200, 1024, false, true}}) {
    Rng rng(7);
    std::vector<uint16_t> a(static_cast<size_t>(c.M * c.K)), b(static_cast<size_t>(c.K * c.N));
    for (auto& x : a) x = f32_to_bf16(rng.normal());
    for (auto& x : b) x = f32_to_bf16(rng.normal());
    std::vector<float> out(static_cast<size_t>(c.M * c.N), 1.0f);
    matmul_bf16(out.data(), a.data(), b.data(), c.M, c.N, c.K, c.ta, c.tb, /*accumulate=*/true);
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t j = 0; j < c.N; ++j) {
        double want = 1.0, mag = 1.0;
        for (int64_t k = 0; k < c.K; ++k) {
          const double x = bf16_to_f32(c.ta ? a[k * c.M + i] : a[i * c.K + k]);
          const double y = bf16_to_f32(c.tb ? b[j * c.K + k] : b[k * c.N + j]);
          want += x * y;
          mag += std::fabs(x * y);
        }
        ASSERT_NEAR(out[i * c.N + j], want, 1e-6 * mag * std::sqrt(double(c.K)))
            << c.M << "x" << c.N << "x" << c.K << " at " << i << "," << j;
      }
  }
}

}  // namespace
}  // namespace sft::ops::cpu
