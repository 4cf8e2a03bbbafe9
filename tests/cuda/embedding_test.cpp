// Embedding forward/backward on CUDA: the forward is a copy (exact); the backward adds repeated
// ids in token order like the CPU kernel, so it equals the CPU's f32 result bit for bit (and the
// f64 reference within 1e-6), with identical bits run to run.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"

namespace sft {
namespace {

using namespace cuda_test;  // DeviceTensor, HostTensor, filled, random_values, ...

TEST(CudaEmbedding, ForwardCopiesAndBackwardAddsInTokenOrder) {
  SFT_SKIP_WITHOUT_CUDA();
  const int64_t V = 11, C = 300;
  // Repeats near and far apart (across the 256-token tiles of the link kernel), a single use,
  // and rows never used.
  std::vector<int64_t> ids;
  for (int64_t t = 0; t < 600; ++t) ids.push_back(t % 7 == 0 ? 3 : (t * 5 + 1) % 9);
  ids.push_back(10);
  const int64_t T = static_cast<int64_t>(ids.size());
  const size_t n = size_t(T * C);
  const Values table = random_values(size_t(V * C), 1, 1.0);
  const Values dout = random_values(n, 2, 1.0), dtable0 = random_values(size_t(V * C), 3, 0x1p-10);
  const auto outs = cuda_test::run_twice([&] {
    DeviceIds I(ids);
    DeviceTensor W(DType::kF32, V, C, table), out(DType::kF32, T, C, filled(n, kNaN));
    DeviceTensor G(DType::kF32, T, C, dout), dW(DType::kF32, V, C, dtable0);
    ops::cuda::embedding_forward(out.view(), I.data(), W.view());
    ops::cuda::embedding_backward(dW.view(), G.view(), I.data());
    return std::vector<Values>{out.read(), dW.read()};
  });
  for (DType dt : {DType::kF32, DType::kF64}) {
    HostTensor W(dt, V, C, table), out(dt, T, C, filled(n, kNaN));
    HostTensor G(dt, T, C, dout), dW(dt, V, C, dtable0);
    ops::embedding_forward(out.view(), ids.data(), W.view());
    ops::embedding_backward(dW.view(), G.view(), ids.data());
    EXPECT_TRUE(cuda_test::same_bits(outs[0], out.read())) << "forward vs " << dtype_name(dt);
    if (dt == DType::kF32)
      EXPECT_TRUE(cuda_test::same_bits(outs[1], dW.read())) << "backward vs the CPU's f32";
    else
      EXPECT_LE(cuda_test::relative_error(outs[1], dW.read()), 1e-6) << "backward vs f64";
  }
}

}  // namespace
}  // namespace sft
