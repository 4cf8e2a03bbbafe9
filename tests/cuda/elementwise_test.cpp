// Elementwise CUDA kernels vs the CPU: add (f32 += f32 | bf16), add_bias, scale, add_scalar, cast,
// zero and add_uniform_noise (NEFTune's noise, the draw included) are one or two roundings (or
// none) per element, so they equal the CPU's f32 results bit for bit;
// bias_backward sums columns in a different fixed order: 1e-5 vs the f64 reference (as
// tests/conformance). Every output twice for identical bits.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/half.h"
#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"

namespace sft {
namespace {

using namespace cuda_test;  // DeviceTensor, HostTensor, filled, random_values, ...

constexpr int64_t N = 257, C = 67;
constexpr size_t n = size_t(N * C);

TEST(CudaElementwise, AddAddBiasScaleAndAddScalarEqualTheCpu) {
  SFT_SKIP_WITHOUT_CUDA();
  for (DType src_dtype : {DType::kF32, DType::kBF16}) {
    const Values dst = random_values(n, 1, 1.0), src = random_values(n, 2, 1.0, src_dtype);
    const Values bias = random_values(size_t(C), 3, 1.0);
    const auto outs = cuda_test::run_twice([&] {
      DeviceTensor D(DType::kF32, N, C, dst), S(src_dtype, N, C, src), B(DType::kF32, 1, C, bias);
      ops::cuda::add(D.view(), S.view());
      const Values added = D.read();
      ops::cuda::add_bias(D.view(), B.view());
      const Values biased = D.read();
      ops::cuda::scale(D.view(), 0.37f);
      const Values scaled = D.read();
      ops::cuda::add_scalar(D.view(), 1.0f);
      return std::vector<Values>{added, biased, scaled, D.read()};
    });
    HostTensor D(DType::kF32, N, C, dst), S(src_dtype, N, C, src), B(DType::kF32, 1, C, bias);
    ops::add(D.view(), S.view());
    EXPECT_TRUE(cuda_test::same_bits(outs[0], D.read())) << "add " << dtype_name(src_dtype);
    ops::add_bias(D.view(), B.view());
    EXPECT_TRUE(cuda_test::same_bits(outs[1], D.read())) << "add_bias";
    ops::scale(D.view(), 0.37f);
    EXPECT_TRUE(cuda_test::same_bits(outs[2], D.read())) << "scale";
    ops::add_scalar(D.view(), 1.0f);
    EXPECT_TRUE(cuda_test::same_bits(outs[3], D.read())) << "add_scalar";
  }
}

// The device draws the CPU's Philox words (core/philox.h compiled for both): the same bits for
// any offset into the stream, including a block of four words split at the start.
TEST(CudaElementwise, UniformNoiseEqualsTheCpuBitForBit) {
  SFT_SKIP_WITHOUT_CUDA();
  const Values x = random_values(n, 1, 1.0);
  for (const uint64_t position : {uint64_t{0}, uint64_t{3}, uint64_t{1} << 33}) {
    const auto outs = cuda_test::run_twice([&] {
      DeviceTensor X(DType::kF32, N, C, x);
      ops::cuda::add_uniform_noise(X.view(), 0.03f, 42, 7, position);
      return std::vector<Values>{X.read()};
    });
    HostTensor X(DType::kF32, N, C, x);
    ops::add_uniform_noise(X.view(), 0.03f, 42, 7, position);
    EXPECT_TRUE(cuda_test::same_bits(outs[0], X.read())) << "position " << position;
  }
}

// Dropout's mask and scaling on the device are the CPU's bits: f32 and bf16, = and +=.
TEST(CudaElementwise, DropoutEqualsTheCpuBitForBit) {
  SFT_SKIP_WITHOUT_CUDA();
  for (DType dtype : {DType::kF32, DType::kBF16})
    for (bool accumulate : {false, true}) {
      if (accumulate && dtype == DType::kBF16) continue;
      const Values src = random_values(n, 1, 1.0, dtype), dst = random_values(n, 2, 1.0, dtype);
      const uint64_t position = uint64_t{5} << 40;
      const auto outs = cuda_test::run_twice([&] {
        DeviceTensor D(dtype, N, C, dst), S(dtype, N, C, src);
        ops::cuda::dropout(D.view(), S.view(), 0.1f, 42, 7, position, accumulate);
        return std::vector<Values>{D.read()};
      });
      HostTensor D(dtype, N, C, dst), S(dtype, N, C, src);
      ops::dropout(D.view(), S.view(), 0.1f, 42, 7, position, accumulate);
      EXPECT_TRUE(cuda_test::same_bits(outs[0], D.read()))
          << dtype_name(dtype) << (accumulate ? " +=" : " =");
    }
}

TEST(CudaElementwise, BiasBackwardMatchesTheF64Reference) {
  SFT_SKIP_WITHOUT_CUDA();
  for (int64_t rows : {int64_t{1}, int64_t{64}, int64_t{65}, N}) {
    const Values dy = random_values(size_t(rows * C), 1, 1.0);
    const Values db0 = random_values(size_t(C), 2, 0x1p-10);
    const auto outs = cuda_test::run_twice([&] {
      DeviceTensor DY(DType::kF32, rows, C, dy), DB(DType::kF32, 1, C, db0);
      ops::cuda::bias_backward(DB.view(), DY.view());
      return std::vector<Values>{DB.read()};
    });
    HostTensor DY(DType::kF64, rows, C, dy), DB(DType::kF64, 1, C, db0);
    ops::bias_backward(DB.view(), DY.view());
    EXPECT_LE(cuda_test::relative_error(outs[0], DB.read()), 1e-5) << "rows " << rows;
  }
}

TEST(CudaElementwise, CastsRoundLikeCoreHalf) {
  SFT_SKIP_WITHOUT_CUDA();
  const float inf = std::numeric_limits<float>::infinity();
  // Ties to even both ways, the carry into the next binade, overflow, subnormals, NaN, ±0.
  Values special = {1.0f + 0x1p-8f,
                    1.0f + 3 * 0x1p-8f,
                    1.0f + 0x1p-8f + 0x1p-20f,
                    3.3895e38f,
                    inf,
                    -inf,
                    1e-40f,
                    -0.0f,
                    0.0f,
                    -2.5f,
                    65504.0f,
                    std::numeric_limits<float>::quiet_NaN()};
  Values values = random_values(n - special.size(), 1, 100.0);
  values.insert(values.end(), special.begin(), special.end());
  const auto outs = cuda_test::run_twice([&] {
    DeviceTensor F(DType::kF32, N, C, values), H(DType::kBF16, N, C, filled(n, 7));
    DeviceTensor back(DType::kF32, N, C, filled(n, kNaN)), copy(DType::kF32, N, C, filled(n, kNaN));
    ops::cuda::cast(H.view(), F.view());
    ops::cuda::cast(back.view(), H.view());
    ops::cuda::cast(copy.view(), F.view());
    return std::vector<Values>{back.read(), copy.read()};
  });
  Values want(n);
  for (size_t i = 0; i < n; ++i) want[i] = bf16_to_f32(f32_to_bf16(static_cast<float>(values[i])));
  EXPECT_TRUE(cuda_test::same_bits(outs[0], want)) << "f32 → bf16 → f32";
  EXPECT_TRUE(cuda_test::same_bits(outs[1], values)) << "f32 → f32";
}

TEST(CudaElementwise, ZeroClearsEveryByte) {
  SFT_SKIP_WITHOUT_CUDA();
  DeviceTensor X(DType::kBF16, N, C, random_values(n, 1, 1.0));
  ops::cuda::zero(X.view());
  EXPECT_TRUE(cuda_test::same_bits(X.read(), filled(n, 0.0)));
}

}  // namespace
}  // namespace sft
