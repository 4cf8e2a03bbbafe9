// RMSNorm forward/backward on CUDA vs the CPU's f64 kernels on the same values, twice for
// identical bits. Tolerances (max |err| / max |ref|), f32: out, rstd, dx 1e-5; dw 1e-5 (column
// sums over up to 300 rows, accumulated into a non-zero start).
#include <gtest/gtest.h>

#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"

namespace sft {
namespace {

using namespace cuda_test;  // DeviceTensor, HostTensor, filled, random_values, ...

TEST(CudaRmsnorm, ForwardAndBackwardMatchTheF64Reference) {
  SFT_SKIP_WITHOUT_CUDA();
  // C below, at and above the block of 256 threads; N across a 64-row chunk boundary.
  struct Shape {
    int64_t N, C;
  };
  for (const Shape shape : {Shape{3, 8}, Shape{65, 256}, Shape{300, 1000}, Shape{1, 3}}) {
    const int64_t N = shape.N, C = shape.C;
    const size_t n = static_cast<size_t>(N * C);
    const double eps = 1e-6;
    const Values x = random_values(n, 1, 1.0), w = random_values(size_t(C), 2, 0.3, DType::kF32, 1);
    const Values dout = random_values(n, 3, 1.0), dw0 = random_values(size_t(C), 4, 0x1p-10);
    const auto outs = cuda_test::run_twice([&] {
      DeviceTensor X(DType::kF32, N, C, x), W(DType::kF32, 1, C, w), G(DType::kF32, N, C, dout);
      DeviceTensor out(DType::kF32, N, C, filled(n, kNaN)),
          rstd(DType::kF32, N, 1, filled(size_t(N), kNaN));
      DeviceTensor dx(DType::kF32, N, C, filled(n, kNaN)), dw(DType::kF32, 1, C, dw0);
      ops::cuda::rmsnorm_forward(out.view(), rstd.view(), X.view(), W.view(), eps);
      ops::cuda::rmsnorm_backward(dx.view(), dw.view(), G.view(), X.view(), rstd.view(), W.view());
      return std::vector<Values>{out.read(), rstd.read(), dx.read(), dw.read()};
    });
    HostTensor X(DType::kF64, N, C, x), W(DType::kF64, 1, C, w), G(DType::kF64, N, C, dout);
    HostTensor out(DType::kF64, N, C, filled(n, kNaN)),
        rstd(DType::kF64, N, 1, filled(size_t(N), kNaN));
    HostTensor dx(DType::kF64, N, C, filled(n, kNaN)), dw(DType::kF64, 1, C, dw0);
    ops::rmsnorm_forward(out.view(), rstd.view(), X.view(), W.view(), eps);
    ops::rmsnorm_backward(dx.view(), dw.view(), G.view(), X.view(), rstd.view(), W.view());
    const char* names[] = {"out", "rstd", "dx", "dw"};
    const Values refs[] = {out.read(), rstd.read(), dx.read(), dw.read()};
    for (int i = 0; i < 4; ++i)
      EXPECT_LE(cuda_test::relative_error(outs[size_t(i)], refs[i]), 1e-5)
          << names[i] << " N=" << N << " C=" << C;
  }
}

}  // namespace
}  // namespace sft
