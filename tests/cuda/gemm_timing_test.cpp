// Timing of the cuBLASLt bf16 GEMMs of one Qwen3-0.6B layer and the LM head (hidden 1024,
// intermediate 3072, 16 query heads and 8 KV heads of 128, vocabulary 151936) on 8 packed rows of
// 1024 tokens: forward y = x wᵀ, backward dx = dy w and dw += dyᵀ x, as model/linear.cpp calls
// them. Prints ms and TFLOP/s per shape against the 989 TFLOP/s dense bf16 peak of H100/H200.
// Disabled by default (it measures, it checks nothing but that the calls run): scripts/
// device_check.sh runs it with --gtest_also_run_disabled_tests --gtest_filter=CudaGemmTiming.*.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/half.h"
#include "cuda_test_support.h"
#include "ops/cuda/cuda_memory.h"
#include "ops/cuda/cuda_ops.h"

namespace sft {
namespace {

using ops::View;
namespace cuda = ops::cuda;

constexpr double kPeakTflops = 989.0;

struct Gemm {
  std::string name;
  int64_t M, N, K;
  bool ta, tb, accumulate;
};

// The three products of a Linear with `in` inputs and `out` outputs over T tokens.
void add_linear(std::vector<Gemm>& list, const std::string& name, int64_t T, int64_t in,
                int64_t out) {
  list.push_back({name + " fwd", T, out, in, false, true, false});
  list.push_back({name + " dx", T, in, out, false, false, false});
  list.push_back({name + " dw", out, in, T, true, false, true});
}

// Device memory of n bf16 values: copies of a pool of random ones.
void fill_random(uint16_t* device, int64_t n, const std::vector<uint16_t>& pool) {
  const auto size = static_cast<int64_t>(pool.size());
  for (int64_t at = 0; at < n; at += size)
    cuda::copy_to_device(device + at, pool.data(),
                         static_cast<size_t>(std::min(size, n - at)) * sizeof(uint16_t));
}

TEST(CudaGemmTiming, DISABLED_Qwen3_0_6B_Shapes) {
  SFT_SKIP_WITHOUT_CUDA();
  std::vector<uint16_t> pool(size_t{1} << 22);
  {
    const cuda_test::Values values = cuda_test::random_values(pool.size(), 1, 0.05, DType::kBF16);
    for (size_t i = 0; i < pool.size(); ++i) pool[i] = f32_to_bf16(static_cast<float>(values[i]));
  }
  const int64_t T = 8 * 1024, C = 1024, I = 3072, Q = 16 * 128, KV = 8 * 128, V = 151936;
  std::vector<Gemm> list;
  add_linear(list, "q_proj", T, C, Q);
  add_linear(list, "k_proj", T, C, KV);
  add_linear(list, "o_proj", T, Q, C);
  add_linear(list, "gate_proj", T, C, I);
  add_linear(list, "down_proj", T, I, C);
  add_linear(list, "lm_head/2k", 2048, C, V);  // a chunk of the (later) fused LM head

  std::printf("%-16s %7s %7s %7s %9s %9s %7s\n", "gemm (bf16)", "M", "N", "K", "ms", "TFLOP/s",
              "% peak");
  double total_flops = 0, total_seconds = 0;
  for (const Gemm& g : list) {
    const int64_t ar = g.ta ? g.K : g.M, ac = g.ta ? g.M : g.K;
    const int64_t br = g.tb ? g.N : g.K, bc = g.tb ? g.K : g.N;
    Arena arena(cuda_allocator());
    uint16_t *a = nullptr, *b = nullptr;
    float* c = nullptr;
    carve(arena, [&](Carver& carver) {
      a = carver.take<uint16_t>(ar * ac);
      b = carver.take<uint16_t>(br * bc);
      c = carver.take<float>(g.M * g.N);
    });
    fill_random(a, ar * ac, pool);  // random data: zeros run faster (894 vs 788 measured)
    fill_random(b, br * bc, pool);
    const View A = ops::view_of(a, ar, ac, Device::kCuda),
               B = ops::view_of(b, br, bc, Device::kCuda);
    const View Cv = ops::view_of(c, g.M, g.N, Device::kCuda);
    for (int i = 0; i < 3; ++i) cuda::matmul(Cv, A, B, g.ta, g.tb, g.accumulate);
    cuda::synchronize();
    const int reps = 20;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) cuda::matmul(Cv, A, B, g.ta, g.tb, g.accumulate);
    cuda::synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
    const double flops = 2.0 * double(g.M) * double(g.N) * double(g.K);
    total_flops += flops;
    total_seconds += seconds;
    const double tflops = flops / seconds * 1e-12;
    std::printf("%-16s %7lld %7lld %7lld %9.4f %9.1f %6.1f%%\n", g.name.c_str(),
                static_cast<long long>(g.M), static_cast<long long>(g.N),
                static_cast<long long>(g.K), seconds * 1e3, tflops, 100 * tflops / kPeakTflops);
  }
  const double tflops = total_flops / total_seconds * 1e-12;
  std::printf("%-16s %33.4f %9.1f %6.1f%%\n", "all", total_seconds * 1e3, tflops,
              100 * tflops / kPeakTflops);
  RecordProperty("bf16_gemm_tflops", std::to_string(tflops));
}

}  // namespace
}  // namespace sft
