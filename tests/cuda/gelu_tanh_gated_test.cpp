// Gated GELU-tanh (Gemma's MLP) forward/backward on CUDA vs the CPU's f64 kernels on the same
// values (f32, and bf16 gate/up with f32 outputs), twice for identical bits. Tolerances (max |err|
// / max |ref|): 1e-5 for h, dgate, dup in both (inputs are exact on their grid; everything computes
// in fp32, tanhf within a few ulp).
#include <gtest/gtest.h>

#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"

namespace sft {
namespace {

using namespace cuda_test;  // DeviceTensor, HostTensor, filled, random_values, ...

TEST(CudaGeluTanhGated, ForwardAndBackwardMatchTheF64Reference) {
  SFT_SKIP_WITHOUT_CUDA();
  const int64_t N = 33, C = 70;  // not a multiple of the block
  const size_t n = size_t(N * C);
  for (DType in : {DType::kF32, DType::kBF16}) {
    const Values gate = random_values(n, 1, 3.0, in), up = random_values(n, 2, 1.0, in);
    const Values dh = random_values(n, 3, 1.0);
    const auto outs = cuda_test::run_twice([&] {
      DeviceTensor G(in, N, C, gate), U(in, N, C, up), DH(DType::kF32, N, C, dh);
      DeviceTensor h(DType::kF32, N, C, filled(n, kNaN)), dg(DType::kF32, N, C, filled(n, kNaN)),
          du(DType::kF32, N, C, filled(n, kNaN));
      ops::cuda::gelu_tanh_gated_forward(h.view(), G.view(), U.view());
      ops::cuda::gelu_tanh_gated_backward(dg.view(), du.view(), DH.view(), G.view(), U.view());
      return std::vector<Values>{h.read(), dg.read(), du.read()};
    });
    HostTensor G(DType::kF64, N, C, gate), U(DType::kF64, N, C, up), DH(DType::kF64, N, C, dh);
    HostTensor h(DType::kF64, N, C, filled(n, kNaN)), dg(DType::kF64, N, C, filled(n, kNaN)),
        du(DType::kF64, N, C, filled(n, kNaN));
    ops::gelu_tanh_gated_forward(h.view(), G.view(), U.view());
    ops::gelu_tanh_gated_backward(dg.view(), du.view(), DH.view(), G.view(), U.view());
    EXPECT_LE(cuda_test::relative_error(outs[0], h.read()), 1e-5) << "h " << dtype_name(in);
    EXPECT_LE(cuda_test::relative_error(outs[1], dg.read()), 1e-5) << "dgate " << dtype_name(in);
    EXPECT_LE(cuda_test::relative_error(outs[2], du.read()), 1e-5) << "dup " << dtype_name(in);
  }
}

}  // namespace
}  // namespace sft
