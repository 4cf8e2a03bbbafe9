// ops::matmul<T>: chooses the library per call. double always runs OpenBLAS (the fp64
// reference). float runs oneDNN or OpenBLAS by shape class, see prefer_onednn(); the policy is
// a pure function of the problem, so a given thread count stays bit-identical run to run.
// Calls from inside pool workers (parallel = false) always take single-threaded OpenBLAS:
// oneDNN would start an OpenMP team per worker. SFT_MATMUL_F32=openblas|onednn|microkernel
// overrides the policy for benchmarks and bisecting (read once); microkernel is our own AVX-512
// GEMM (gemm_microkernel.h), on every f32 call, pool workers' included. It is not in the automatic
// policy: on the step's shapes (Qwen3-0.6B projections and the fused LM head's calls, one thread,
// CPU time, docs/benchmarks.md issue 31) it ran at 0.79–0.99× the faster library's speed, so the
// libraries keep every shape class.
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/thread_pool.h"
#include "ops/cpu/cpu_features.h"
#include "ops/cpu/gemm_microkernel.h"
#include "ops/cpu/matmul_openblas.h"
#include "ops/cpu/onednn_matmul.h"
#include "ops/ops.h"

namespace sft::ops {

namespace {

enum class F32Library { automatic, openblas, onednn, microkernel };

F32Library f32_override() {
  static const F32Library choice = [] {
    const char* v = std::getenv("SFT_MATMUL_F32");
    if (!v || !*v || std::strcmp(v, "auto") == 0) return F32Library::automatic;
    if (std::strcmp(v, "openblas") == 0) return F32Library::openblas;
    if (std::strcmp(v, "onednn") == 0) return F32Library::onednn;
    if (std::strcmp(v, "microkernel") == 0) {
      if (!cpu::use_avx512())
        fail("ops",
             "SFT_MATMUL_F32=microkernel needs AVX-512, which this CPU (or SFT_CPU_ISA) rules out "
             "(hint: use auto, openblas or onednn)");
      return F32Library::microkernel;
    }
    fail("ops", std::string("SFT_MATMUL_F32='") + v +
                    "' is not a matmul library (hint: use auto, openblas, onednn or microkernel)");
  }();
  return choice;
}

// Measured with bench/gemm_shapes_bench.cpp (2 threads, idle Sapphire Rapids VM, one OpenMP
// team shared by our pool and oneDNN, core/thread_pool.h): oneDNN's AVX-512 brgemm runs
// 1.4–1.65× faster than OpenBLAS's Haswell kernels on every projection of the 103M model
// (0.13–0.8 G multiply-adds) and of Qwen3-0.6B (1–3 G), and 1.1–1.6× on the LM head; but with a
// plain (not transposed) B that is 3072 wide (0.6B's down-projection dx and dW) it runs at 0.5×.
// Before the pools were one team its OpenMP barriers lost to OpenBLAS below 2^30 multiply-adds;
// below 2^27 (LoRA's rank-r products, tiny test models) no win was measured, and each new shape
// costs oneDNN a JIT compile of tens of ms. Hence the rule: oneDNN for ≥ 2^27 multiply-adds when B
// is transposed or at most 2048 wide; OpenBLAS otherwise. It is a pure function of the shape, so
// the choice (and the result) never depends on timing.
bool prefer_onednn(int64_t M, int64_t N, int64_t K, bool trans_b) {
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  return work >= 134217728.0 && (trans_b || N <= 2048);
}

}  // namespace

template <typename T>
void matmul(T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K, bool trans_a,
            bool trans_b, bool accumulate, int64_t lda, int64_t ldb, int64_t ldc, bool parallel) {
  if constexpr (std::is_same_v<T, float>) {
    const F32Library lib = f32_override();
    if (lib == F32Library::microkernel) {
      using namespace cpu::gemm_microkernel;
      gemm({c, ldc ? ldc : N, a, lda ? lda : (trans_a ? M : K), trans_a, b,
            ldb ? ldb : (trans_b ? K : N), trans_b, M, N, K, accumulate},
           parallel ? Threads::kPool : Threads::kCaller);
      return;
    }
    if (parallel && M > 0 && N > 0 && K > 0 &&
        (lib == F32Library::onednn ||
         (lib == F32Library::automatic && prefer_onednn(M, N, K, trans_b)))) {
      onednn::matmul(onednn::Operand::f32, c, a, b, M, N, K, trans_a, trans_b, accumulate,
                     lda ? lda : (trans_a ? M : K), ldb ? ldb : (trans_b ? K : N), ldc ? ldc : N);
      return;
    }
  }
  matmul_openblas(c, a, b, M, N, K, trans_a, trans_b, accumulate, lda, ldb, ldc, parallel);
}

template void matmul<float>(float*, const float*, const float*, int64_t, int64_t, int64_t, bool,
                            bool, bool, int64_t, int64_t, int64_t, bool);
template void matmul<double>(double*, const double*, const double*, int64_t, int64_t, int64_t, bool,
                             bool, bool, int64_t, int64_t, int64_t, bool);

void parallel_rows(int64_t n, int64_t grain, void (*fn)(void*, int64_t, int64_t), void* ctx) {
  if (n <= 0) return;
  ThreadPool& pool = default_thread_pool();
  if (pool.size() == 1 || n < 2 * grain) {
    fn(ctx, 0, n);
    return;
  }
  pool.parallel_for(static_cast<size_t>(n), [&](size_t, size_t begin, size_t end) {
    fn(ctx, static_cast<int64_t>(begin), static_cast<int64_t>(end));
  });
}

}  // namespace sft::ops
