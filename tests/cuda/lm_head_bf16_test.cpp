// The bf16 fused LM head on CUDA against the CPU's bf16 kernel (ops/cpu/lm_head_ce_bf16.cpp) on
// the same bf16 values, with and without Gemma 2's final-logit soft-cap: what a bf16 training
// step's head computes on either device. The CPU caps autocast's bf16 logits as transformers
// does, three bf16 ops each rounded (/ cap, tanh, · cap) and their three rounded gradients; the
// CUDA row pass must do the same (lm_head_row.cuh), not cap the rounded logit in fp32.
//
// What may still differ: the products' fp32 sums (the CPU's blocked bf16 GEMM, cuBLASLt's or the
// emulation's double sums), so now and then a logit a hair from a bf16 rounding boundary rounds
// one bf16 ulp apart, and its dlogit with it. Bounds: loss and entropy 1e-6 relative (the rows'
// exp sums are in double on both; a flipped logit moves its row's loss by ≤ p · 2⁻⁸ · |z|),
// dx and dw 2e-3 (max |err| / max |ref|: a flipped bf16 dlogit is 2⁻⁸ of one term of a sum of
// V). Measured on the emulation: loss and entropy ≤ 6.3e-10, dx ≤ 9.8e-7, dw ≤ 2.2e-7. The
// earlier CUDA kernel (the cap in fp32 on the rounded logit, rounded once; its gradient
// 1 − (capped / cap)²) was 9e-5–1.2e-4 off in the loss and 6e-3–1.1e-2 in dx and dw on these
// values, outside both bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"

namespace sft {
namespace {

using namespace cuda_test;

struct Head {
  double loss = 0, entropy = 0;
  int64_t count = 0, correct = 0;
  Values dx, dw;
};

constexpr int64_t kT = 45, kC = 40, kV = 700;

std::vector<int64_t> targets() {
  std::vector<int64_t> t(static_cast<size_t>(kT));
  for (int64_t i = 0; i < kT; ++i) t[size_t(i)] = i % 9 == 4 ? -1 : (i * 131 + 7) % kV;
  return t;
}

// Logits of a few units (x ~ N(0, 1), w ~ N(0, 0.4²), C = 40: |z| up to ≈ 10), so a cap of 5
// bends them well into tanh's curve.
Values x_values() {
  return random_values(size_t(kT * kC), 11, 1.0, DType::kBF16);
}
Values w_values() {
  return random_values(size_t(kV * kC), 12, 0.4, DType::kBF16);
}
Values dw_start() {
  return random_values(size_t(kV * kC), 13, 0x1p-10);
}

Head on_cpu(double softcap, double scale) {
  HostTensor X(DType::kBF16, kT, kC, x_values()), W(DType::kBF16, kV, kC, w_values());
  HostTensor dX(DType::kF32, kT, kC, filled(size_t(kT * kC), kNaN));
  HostTensor dW(DType::kF32, kV, kC, dw_start());
  ops::WorkspaceArena arena;
  const ops::Workspace ws = arena.get(
      ops::lm_head_workspace_bytes({.dtype = DType::kBF16, .rows = kT, .hidden = kC, .vocab = kV}));
  const std::vector<int64_t> t = targets();
  const ops::LmHeadStats s = ops::lm_head_cross_entropy(dX.view(), dW.view(), {}, X.view(),
                                                        W.view(), t.data(), scale, ws, {}, softcap);
  return {s.loss_sum, s.entropy_sum, s.count, s.correct, dX.read(), dW.read()};
}

Head on_cuda(double softcap, double scale) {
  DeviceTensor X(DType::kBF16, kT, kC, x_values()), W(DType::kBF16, kV, kC, w_values());
  DeviceTensor dX(DType::kF32, kT, kC, filled(size_t(kT * kC), kNaN));
  DeviceTensor dW(DType::kF32, kV, kC, dw_start());
  const DeviceIds t(targets());
  const ops::LmHeadStats s = ops::lm_head_cross_entropy(dX.view(), dW.view(), {}, X.view(),
                                                        W.view(), t.data(), scale, {}, {}, softcap);
  return {s.loss_sum, s.entropy_sum, s.count, s.correct, dX.read(), dW.read()};
}

class CudaLmHeadBf16 : public ::testing::TestWithParam<double> {};

TEST_P(CudaLmHeadBf16, EqualsTheCpuBf16Kernel) {
  SFT_SKIP_WITHOUT_CUDA();
  const double softcap = GetParam(), scale = 1.0 / 40;
  const Head ref = on_cpu(softcap, scale), got = on_cuda(softcap, scale);
  EXPECT_EQ(got.count, ref.count);
  EXPECT_EQ(got.correct, ref.correct);
  const double loss = std::abs(got.loss - ref.loss) / std::abs(ref.loss);
  const double entropy = std::abs(got.entropy - ref.entropy) / std::abs(ref.entropy);
  const double dx = relative_error(got.dx, ref.dx), dw = relative_error(got.dw, ref.dw);
  EXPECT_LE(loss, 1e-6);
  EXPECT_LE(entropy, 1e-6);
  EXPECT_LE(dx, 2e-3);
  EXPECT_LE(dw, 2e-3);
  std::printf("[cuda lm head bf16] softcap %g: loss %.3g, entropy %.3g, dx %.3g, dw %.3g\n",
              softcap, loss, entropy, dx, dw);
}

INSTANTIATE_TEST_SUITE_P(Softcaps, CudaLmHeadBf16, ::testing::Values(0.0, 5.0, 30.0));

}  // namespace
}  // namespace sft
