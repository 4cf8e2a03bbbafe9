// The oneDNN f32 path (onednn::matmul and ops::matmul<float> when it routes there) against an
// fp64 loop, every layout and accumulate, bit-identical reruns; and the ISA override that the
// ctests ops.matmul_isa_avx2 (ONEDNN_MAX_CPU_ISA=AVX2: no AMX, no AVX-512) and
// ops.matmul_isa_avx512_core_bf16 (no AMX) rely on; and that oneDNN and our thread pool run on
// one OpenMP runtime.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/thread_pool.h"
#include "ops/cpu/onednn_matmul.h"
#include "ops/ops.h"

namespace sft::ops {
namespace {

// via_ops: through ops::matmul<float> with SFT_MATMUL_F32 unset (the automatic policy), else
// straight into onednn::matmul.
void check(bool ta, bool tb, bool acc, int64_t M, int64_t N, int64_t K, int64_t pad, bool via_ops) {
  Rng rng(31, static_cast<uint64_t>(ta * 4 + tb * 2 + acc));
  const int64_t ra = ta ? K : M, ca = ta ? M : K, rb = tb ? N : K, cb = tb ? K : N;
  const int64_t lda = ca + pad, ldb = cb + pad, ldc = N + pad;
  std::vector<float> a(static_cast<size_t>(ra * lda)), b(static_cast<size_t>(rb * ldb)),
      c(static_cast<size_t>(M * ldc));
  for (float& x : a) x = rng.normal();
  for (float& x : b) x = rng.normal();
  for (float& x : c) x = rng.normal();
  const std::vector<float> before = c;
  std::vector<float> again = c;
  auto run = [&](float* out) {
    if (via_ops)
      matmul(out, a.data(), b.data(), M, N, K, ta, tb, acc, lda, ldb, ldc);
    else
      onednn::matmul(onednn::Operand::f32, out, a.data(), b.data(), M, N, K, ta, tb, acc, lda, ldb,
                     ldc);
  };
  run(c.data());
  run(again.data());
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double s = acc ? double(before[i * ldc + j]) : 0.0, mag = std::fabs(s);
      for (int64_t k = 0; k < K; ++k) {
        const double p = double(ta ? a[k * lda + i] : a[i * lda + k]) *
                         double(tb ? b[j * ldb + k] : b[k * ldb + j]);
        s += p;
        mag += std::fabs(p);
      }
      ASSERT_NEAR(c[i * ldc + j], s, (double(K) + 2) * 1.2e-7 * mag)
          << "ta " << ta << " tb " << tb << " acc " << acc << " at " << i << "," << j;
    }
    for (int64_t j = N; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], before[i * ldc + j]);
  }
  EXPECT_EQ(c, again);
}

TEST(OnednnMatmul, F32MatchesFp64ForEveryLayout) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool acc : {false, true}) {
        check(ta, tb, acc, 70, 90, 80, 3, false);
        check(ta, tb, acc, 1, 17, 9, 0, false);
        check(ta, tb, acc, 33, 1, 1, 2, false);
      }
}

// ops::matmul<float> routes by shape (matmul.cpp): small products stay on OpenBLAS (no oneDNN
// primitive is created); ≥ 2^30 multiply-adds with B transposed or ≤ 2048 wide go to oneDNN.
// The large product is checked on a sample of entries against fp64 and rerun bit-identically.
TEST(OnednnMatmul, OpsMatmulFloatRoutesBySize) {
  if (std::getenv("SFT_MATMUL_F32")) GTEST_SKIP() << "SFT_MATMUL_F32 overrides the policy";
  {
    const size_t before = onednn::cached_primitives();
    check(false, true, false, 70, 90, 80, 0, true);
    EXPECT_EQ(onednn::cached_primitives(), before) << "a small product went to oneDNN";
  }
  const int64_t M = 1024, N = 2048, K = 1024;
  for (bool ta : {false, true}) {
    const bool tb = !ta, acc = ta;
    Rng rng(37, ta);
    std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N)),
        c(static_cast<size_t>(M * N));
    for (float& x : a) x = rng.normal();
    for (float& x : b) x = rng.normal();
    for (float& x : c) x = rng.normal();
    const std::vector<float> before = c;
    std::vector<float> again = c;
    const size_t cached = onednn::cached_primitives();
    matmul(c.data(), a.data(), b.data(), M, N, K, ta, tb, acc);
    EXPECT_GT(onednn::cached_primitives(), cached) << "a large product did not go to oneDNN";
    matmul(again.data(), a.data(), b.data(), M, N, K, ta, tb, acc);
    EXPECT_EQ(c, again);
    for (int s = 0; s < 256; ++s) {
      const int64_t i = static_cast<int64_t>(rng.below(M)), j = static_cast<int64_t>(rng.below(N));
      double want = acc ? double(before[i * N + j]) : 0.0, mag = std::fabs(want);
      for (int64_t k = 0; k < K; ++k) {
        const double p =
            double(ta ? a[k * M + i] : a[i * K + k]) * double(tb ? b[j * K + k] : b[k * N + j]);
        want += p;
        mag += std::fabs(p);
      }
      ASSERT_NEAR(c[i * N + j], want, (double(K) + 2) * 1.2e-7 * mag) << i << "," << j;
    }
  }
}

// core/thread_pool.h: oneDNN calls libgomp's entry point GOMP_parallel; the pool's regions are
// clang's __kmpc_fork_call (LLVM's libomp) or, built with GCC, GOMP_parallel itself. Both must
// resolve in one library, or the process holds two teams of threads that spin against each
// other. (The dynamic linker binds oneDNN's calls the way dlsym(RTLD_DEFAULT) resolves them.)
TEST(OnednnMatmul, SharesTheThreadPoolsOpenMpRuntime) {
  (void)onednn::supports_bf16();  // oneDNN has run (its libraries are loaded and bound)
  auto library_of = [](const char* symbol) -> std::string {
    void* address = dlsym(RTLD_DEFAULT, symbol);
    Dl_info info{};
    if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
    return info.dli_fname;
  };
  const std::string onednn_runtime = library_of("GOMP_parallel");
  ASSERT_FALSE(onednn_runtime.empty()) << "oneDNN's OpenMP runtime is not loaded";
  const std::string clang_pool = library_of("__kmpc_fork_call");
  const std::string pool_runtime = clang_pool.empty() ? onednn_runtime : clang_pool;
  EXPECT_EQ(onednn_runtime, pool_runtime);
  // And a pool region runs on that runtime's team.
  ThreadPool pool(2);
  using GetNumThreads = int (*)();
  const auto team_size =
      reinterpret_cast<GetNumThreads>(dlsym(RTLD_DEFAULT, "omp_get_num_threads"));
  ASSERT_NE(team_size, nullptr);
  std::atomic<int> members = 0;
  pool.parallel_for(2, [&](size_t, size_t, size_t) { members += team_size() == 2 ? 1 : 0; });
  EXPECT_EQ(members.load(), 2);
}

TEST(OnednnMatmul, HonoursMaxCpuIsa) {
  const std::string isa = onednn::effective_isa();
  const std::string f32 = onednn::implementation(onednn::Operand::f32, 64, 64, 64, false, true);
  const std::string bf16 = onednn::implementation(onednn::Operand::bf16, 64, 64, 64, false, true);
  const char* env = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string cap = env ? env : "";
  if (cap != "AVX2" && cap != "AVX512_CORE_BF16")
    GTEST_SKIP() << "isa " << isa << ", f32 " << f32 << ", bf16 " << bf16;
  EXPECT_EQ(bf16.find("amx"), std::string::npos) << bf16;
  if (cap == "AVX2") {
    EXPECT_EQ(isa, "avx2");
    EXPECT_EQ(f32.find("avx512"), std::string::npos) << f32;
    // oneDNN 2.6 has no bf16 matmul below AVX-512: matmul_bf16 widens to f32 instead.
    EXPECT_FALSE(onednn::supports_bf16()) << bf16;
  } else if (__builtin_cpu_supports("avx512bf16")) {
    EXPECT_EQ(isa, "avx512_core_bf16");
  } else {  // a cap above this CPU leaves oneDNN at the CPU's own best, short of it
    EXPECT_NE(isa, "avx512_core_bf16");
    EXPECT_EQ(isa.find("amx"), std::string::npos) << isa;
  }
}

}  // namespace
}  // namespace sft::ops
