// RoPE forward/backward on CUDA vs the CPU's f64 kernels, full and partial rotary, twice for
// identical bits; the backward undoes the forward. Tolerance (max |err| / max |ref|), f32: 1e-5
// (two products and a sum per element, possibly fused).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"

namespace sft {
namespace {

using namespace cuda_test;  // DeviceTensor, HostTensor, filled, random_values, ...

TEST(CudaRope, ForwardAndBackwardMatchTheF64Reference) {
  SFT_SKIP_WITHOUT_CUDA();
  for (const int64_t R : {16, 10}) {
    SCOPED_TRACE("rotary dims " + std::to_string(R));
    const int64_t T = 7, NH = 3, D = 16, half = R / 2;
    const Values x = random_values(size_t(T * NH * D), 1, 1.0);
    Values cos(size_t(T * half)), sin(size_t(T * half));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < half; ++i) {
        const double angle = double(t) * std::pow(10000.0, -2.0 * double(i) / double(R));
        cos[size_t(t * half + i)] = static_cast<float>(std::cos(angle));
        sin[size_t(t * half + i)] = static_cast<float>(std::sin(angle));
      }
    const auto outs = cuda_test::run_twice([&] {
      DeviceTensor X(DType::kF32, T, NH * D, x), B(DType::kF32, T, NH * D, x);
      DeviceTensor Cs(DType::kF32, T, half, cos), Sn(DType::kF32, T, half, sin);
      ops::cuda::rope_forward(X.view(), Cs.view(), Sn.view(), D);
      ops::cuda::rope_backward(B.view(), Cs.view(), Sn.view(), D);
      const Values forward = X.read(), backward = B.read();
      ops::cuda::rope_backward(X.view(), Cs.view(), Sn.view(), D);  // undoes the forward
      return std::vector<Values>{forward, backward, X.read()};
    });
    HostTensor X(DType::kF64, T, NH * D, x), B(DType::kF64, T, NH * D, x);
    HostTensor Cs(DType::kF64, T, half, cos), Sn(DType::kF64, T, half, sin);
    ops::rope_forward(X.view(), Cs.view(), Sn.view(), D);
    ops::rope_backward(B.view(), Cs.view(), Sn.view(), D);
    EXPECT_LE(cuda_test::relative_error(outs[0], X.read()), 1e-5) << "forward";
    EXPECT_LE(cuda_test::relative_error(outs[1], B.read()), 1e-5) << "backward";
    EXPECT_LE(cuda_test::relative_error(outs[2], x), 1e-5) << "backward ∘ forward";
  }
}

}  // namespace
}  // namespace sft
