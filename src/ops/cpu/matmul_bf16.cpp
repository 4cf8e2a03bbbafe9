// bf16 × bf16 → f32 matmul on oneDNN's matmul primitive (onednn_matmul.h): AMX or AVX512-BF16
// kernels where the CPU has them; fp32 accumulation always. oneDNN 2.6 has no bf16 matmul at
// all below AVX-512, so there the operands are widened (exactly) to f32 and the product runs
// as ops::matmul<float>: the same values and accumulation type, only slower. The widened
// copies are allocated per call (this path is an emulation for CPUs without AVX512-BF16; it
// keeps no hidden buffers, so it allocates in the step loop there).
// Resolves the default strides and the degenerate sizes here so that oneDNN only sees
// problems with M, N, K ≥ 1. Runs on the calling thread with a pool-sized OpenMP team, so it
// must not be called from inside default_thread_pool() workers.
#include <vector>

#include "core/half.h"
#include "ops/cpu/onednn_matmul.h"
#include "ops/ops.h"

namespace sft::ops {

namespace {

// x (rows × cols, row stride ld) as dense f32 in out.
void widen(std::vector<float>& out, const uint16_t* x, int64_t rows, int64_t cols, int64_t ld) {
  if (out.size() < static_cast<size_t>(rows * cols)) out.resize(static_cast<size_t>(rows * cols));
  float* o = out.data();
  parallel_for_rows(rows, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) o[r * cols + c] = bf16_to_f32(x[r * ld + c]);
  });
}

void widened_matmul(float* c, const uint16_t* a, const uint16_t* b, int64_t M, int64_t N, int64_t K,
                    bool trans_a, bool trans_b, bool accumulate, int64_t lda, int64_t ldb,
                    int64_t ldc) {
  std::vector<float> af, bf;
  const int64_t ra = trans_a ? K : M, ca = trans_a ? M : K;
  const int64_t rb = trans_b ? N : K, cb = trans_b ? K : N;
  widen(af, a, ra, ca, lda);
  widen(bf, b, rb, cb, ldb);
  matmul(c, af.data(), bf.data(), M, N, K, trans_a, trans_b, accumulate, ca, cb, ldc);
}

}  // namespace

void matmul_bf16(float* c, const uint16_t* a, const uint16_t* b, int64_t M, int64_t N, int64_t K,
                 bool trans_a, bool trans_b, bool accumulate, int64_t lda, int64_t ldb,
                 int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (lda == 0) lda = trans_a ? M : K;
  if (ldb == 0) ldb = trans_b ? K : N;
  if (ldc == 0) ldc = N;
  if (K <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) c[i * ldc + j] = 0.0f;
    return;
  }
  if (!onednn::supports_bf16()) {
    widened_matmul(c, a, b, M, N, K, trans_a, trans_b, accumulate, lda, ldb, ldc);
    return;
  }
  onednn::matmul(onednn::Operand::bf16, c, a, b, M, N, K, trans_a, trans_b, accumulate, lda, ldb,
                 ldc);
}

}  // namespace sft::ops
