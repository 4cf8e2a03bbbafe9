// The optimizer's CUDA kernels: adamw_update equals the CPU kernel bit for bit (the same fp32
// operations in the same order, no fused multiply-adds), the bf16 copy included, for several
// steps, and the multi-slice update the same; sum_of_squares within 1e-12 of the f64 sum (f32
// squares are exact in double), the CPU kernel's bits (the same summation order) and identical bits
// run to run.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"

namespace sft {
namespace {

using namespace cuda_test;  // DeviceTensor, HostTensor, filled, random_values, ...

// The scalars optim/adamw.h derives for lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay
// 0.01 at `step` (as tests/conformance/optimizer_test.cpp); step 2 also clips (grad_scale).
ops::AdamWScalars scalars(int step, bool decay) {
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, wd = 0.01;
  const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  return {float(-lr / bc1),
          float(std::sqrt(bc2)),
          1e-8f,
          float(1 - b1),
          float(b2),
          float(1 - b2),
          float(1 - lr * wd),
          decay,
          step == 2 ? 0.3712f : 1.0f};
}

TEST(CudaOptimizer, AdamWEqualsTheCpuBitForBit) {
  SFT_SKIP_WITHOUT_CUDA();
  const int64_t n = 70000;
  const Values p0 = random_values(size_t(n), 1, 1.0), m0 = random_values(size_t(n), 2, 0.01);
  Values v0 = random_values(size_t(n), 3, 0.001);
  for (double& x : v0) x = std::abs(x);
  std::vector<Values> grads;
  for (int s = 0; s < 3; ++s) grads.push_back(random_values(size_t(n), 10 + s, 1.0));
  for (bool decay : {true, false}) {
    const auto outs = cuda_test::run_twice([&] {
      DeviceTensor P(DType::kF32, 1, n, p0), M(DType::kF32, 1, n, m0), V(DType::kF32, 1, n, v0);
      DeviceTensor copy(DType::kBF16, 1, n, filled(size_t(n), 0));
      for (int s = 0; s < 3; ++s) {
        DeviceTensor G(DType::kF32, 1, n, grads[size_t(s)]);
        ops::cuda::adamw_update(P.view(), G.view(), M.view(), V.view(), scalars(s + 1, decay),
                                s == 2 ? copy.view() : ops::View{});
        G.read();  // G's memory must outlive the kernel
      }
      return std::vector<Values>{P.read(), M.read(), V.read(), copy.read()};
    });
    HostTensor P(DType::kF32, 1, n, p0), M(DType::kF32, 1, n, m0), V(DType::kF32, 1, n, v0);
    HostTensor copy(DType::kBF16, 1, n, filled(size_t(n), 0));
    for (int s = 0; s < 3; ++s) {
      HostTensor G(DType::kF32, 1, n, grads[size_t(s)]);
      ops::adamw_update(P.view(), G.view(), M.view(), V.view(), scalars(s + 1, decay),
                        s == 2 ? copy.view() : ops::View{});
    }
    EXPECT_TRUE(cuda_test::same_bits(outs[0], P.read())) << "param, decay " << decay;
    EXPECT_TRUE(cuda_test::same_bits(outs[1], M.read())) << "exp_avg";
    EXPECT_TRUE(cuda_test::same_bits(outs[2], V.read())) << "exp_avg_sq";
    EXPECT_TRUE(cuda_test::same_bits(outs[3], copy.read())) << "bf16 copy";
  }
}

// The multi-slice update (what AdamW::step calls): the CPU's bits, with gaps between slices left
// untouched and each slice's own decay.
TEST(CudaOptimizer, AdamWSlicesEqualTheCpuBitForBit) {
  SFT_SKIP_WITHOUT_CUDA();
  const int64_t n = 40000;
  const std::vector<ParamSlice> slices = {
      {1, 17, true}, {20, 0, true}, {20, 20000, false}, {20003, 19990, true}};
  const Values p0 = random_values(size_t(n), 1, 1.0), m0 = random_values(size_t(n), 2, 0.01);
  Values v0 = random_values(size_t(n), 3, 0.001);
  for (double& x : v0) x = std::abs(x);
  const Values g0 = random_values(size_t(n), 4, 1.0);
  DeviceTensor P(DType::kF32, 1, n, p0), M(DType::kF32, 1, n, m0), V(DType::kF32, 1, n, v0);
  DeviceTensor G(DType::kF32, 1, n, g0), copy(DType::kBF16, 1, n, filled(size_t(n), 0));
  ops::cuda::adamw_update_slices(P.view(), G.view(), M.view(), V.view(), slices, scalars(2, true),
                                 copy.view());
  HostTensor HP(DType::kF32, 1, n, p0), HM(DType::kF32, 1, n, m0), HV(DType::kF32, 1, n, v0);
  HostTensor HG(DType::kF32, 1, n, g0), hcopy(DType::kBF16, 1, n, filled(size_t(n), 0));
  ops::adamw_update_slices(HP.view(), HG.view(), HM.view(), HV.view(), slices, scalars(2, true),
                           hcopy.view());
  EXPECT_TRUE(cuda_test::same_bits(P.read(), HP.read())) << "param";
  EXPECT_TRUE(cuda_test::same_bits(M.read(), HM.read())) << "exp_avg";
  EXPECT_TRUE(cuda_test::same_bits(V.read(), HV.read())) << "exp_avg_sq";
  EXPECT_TRUE(cuda_test::same_bits(copy.read(), hcopy.read())) << "bf16 copy";
}

TEST(CudaOptimizer, SumOfSquaresMatchesTheF64Sum) {
  SFT_SKIP_WITHOUT_CUDA();
  // Below one block, exactly one, and many with a ragged end.
  for (int64_t n : {int64_t{1}, int64_t{1} << 14, (int64_t{1} << 20) * 3 + 7}) {
    const Values x = random_values(size_t(n), 1, 2.0);
    double want = 0;
    for (double v : x) want += v * v;
    DeviceTensor X(DType::kF32, 1, n, x);
    const double first = ops::cuda::sum_of_squares(X.view());
    const double second = ops::cuda::sum_of_squares(X.view());
    EXPECT_EQ(std::memcmp(&first, &second, sizeof(double)), 0) << "n " << n;
    EXPECT_LE(std::abs(first - want), 1e-12 * want) << "n " << n;
    // The CPU kernel's summation order, so a device run's grad_norm has the CPU's bits.
    HostTensor H(DType::kF32, 1, n, x);
    const double cpu = ops::sum_of_squares(H.view());
    EXPECT_EQ(std::memcmp(&first, &cpu, sizeof(double)), 0)
        << "n " << n << ": " << first << " vs " << cpu;
  }
}

}  // namespace
}  // namespace sft
