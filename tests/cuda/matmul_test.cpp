// cuBLASLt matmul vs the CPU's f64 matmul on the same values, every transpose combination,
// with and without accumulation, twice for identical bits.
// Tolerances (max |err| / max |ref|): f32 1e-5 (fp32 compute, K ≤ 257); bf16 1e-5 (operands are
// exact bf16 values, their products exact in fp32: only the fp32 accumulation rounds).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"

namespace sft {
namespace {

using namespace cuda_test;  // DeviceTensor, HostTensor, filled, random_values, ...

struct Shape {
  int64_t M, N, K;
};

void check_matmul(DType dtype, Shape s, bool ta, bool tb, bool accumulate) {
  const DType grid = dtype == DType::kBF16 ? DType::kBF16 : DType::kF32;
  const int64_t ar = ta ? s.K : s.M, ac = ta ? s.M : s.K;
  const int64_t br = tb ? s.N : s.K, bc = tb ? s.K : s.N;
  const Values a = random_values(static_cast<size_t>(ar * ac), 1, 1.0, grid);
  const Values b = random_values(static_cast<size_t>(br * bc), 2, 1.0, grid);
  const Values c0 = accumulate ? random_values(static_cast<size_t>(s.M * s.N), 3, 0.5)
                               : cuda_test::filled(static_cast<size_t>(s.M * s.N), cuda_test::kNaN);
  const auto outs = cuda_test::run_twice([&] {
    DeviceTensor A(dtype, ar, ac, a), B(dtype, br, bc, b), C(DType::kF32, s.M, s.N, c0);
    ops::cuda::matmul(C.view(), A.view(), B.view(), ta, tb, accumulate);
    return std::vector<Values>{C.read()};
  });
  HostTensor A(DType::kF64, ar, ac, a), B(DType::kF64, br, bc, b), C(DType::kF64, s.M, s.N, c0);
  ops::matmul(C.view(), A.view(), B.view(), ta, tb, accumulate);
  EXPECT_LE(cuda_test::relative_error(outs[0], C.read()), 1e-5)
      << dtype_name(dtype) << " M=" << s.M << " N=" << s.N << " K=" << s.K << (ta ? " ta" : "")
      << (tb ? " tb" : "") << (accumulate ? " +=" : "");
}

TEST(CudaMatmul, EveryTransposeAndAccumulateMatchesTheF64Reference) {
  SFT_SKIP_WITHOUT_CUDA();
  for (DType dtype : {DType::kF32, DType::kBF16})
    for (Shape s : {Shape{37, 29, 67}, Shape{64, 128, 256}, Shape{1, 5, 257}, Shape{130, 1, 3}})
      for (int flags = 0; flags < 8; ++flags)
        check_matmul(dtype, s, flags & 1, flags & 2, flags & 4);
}

// A view that starts off the 256-byte boundary (a row range) must still work: the algorithm
// is chosen for the pointers' real alignment.
TEST(CudaMatmul, RowRangesOffTheAlignmentBoundary) {
  SFT_SKIP_WITHOUT_CUDA();
  const int64_t M = 9, N = 6, K = 5;
  const Values a = random_values(static_cast<size_t>((M + 1) * K), 4, 1.0);
  const Values b = random_values(static_cast<size_t>(K * N), 5, 1.0);
  DeviceTensor A(DType::kF32, M + 1, K, a), B(DType::kF32, K, N, b);
  DeviceTensor C(DType::kF32, M, N, cuda_test::filled(static_cast<size_t>(M * N), 0));
  ops::cuda::matmul(C.view(), A.view().row_range(1, M), B.view(), false, false, false);
  HostTensor Ah(DType::kF64, M + 1, K, a), Bh(DType::kF64, K, N, b);
  HostTensor Ch(DType::kF64, M, N, cuda_test::filled(static_cast<size_t>(M * N), 0));
  ops::matmul(Ch.view(), Ah.view().row_range(1, M), Bh.view(), false, false, false);
  EXPECT_LE(cuda_test::relative_error(C.read(), Ch.read()), 1e-5);
}

}  // namespace
}  // namespace sft
