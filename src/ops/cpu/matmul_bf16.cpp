// bf16 × bf16 → f32 matmul, fp32 accumulation always, on the path bf16_matmul_path.h chose for
// this CPU: oneDNN's bf16 matmul primitive (onednn_matmul.h) where the CPU has AMX, else the
// operands widened (exactly) to f32 and multiplied as ops::matmul<float>: the same products and
// accumulation type, at the fp32 GEMM's rate. The widened copies live in per-thread buffers that
// only grow, so after the first step of a run this path allocates nothing.
// Resolves the default strides and the degenerate sizes here so that oneDNN only sees
// problems with M, N, K ≥ 1. Runs on the calling thread with a pool-sized OpenMP team, so it
// must not be called from inside default_thread_pool() workers.
#include <algorithm>
#include <vector>

#include "ops/cpu/bf16_matmul_path.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/onednn_matmul.h"
#include "ops/matmul_path.h"
#include "ops/ops.h"

namespace sft::ops {

namespace {

// x (rows × cols, row stride ld) as dense f32 in out (AVX-512 where the CPU has it).
void widen(std::vector<float>& out, const uint16_t* x, int64_t rows, int64_t cols, int64_t ld) {
  if (out.size() < static_cast<size_t>(rows * cols)) out.resize(static_cast<size_t>(rows * cols));
  float* o = out.data();
  parallel_for_rows(rows, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) cpu::widen_row_from_bf16(o + r * cols, x + r * ld, cols);
  });
}

// B is widened a panel of output columns at a time (at most kPanelFloats values), so a wide B (a
// vocabulary shard of the LM head) never has a full fp32 copy; splitting N leaves every output's
// sum over K as it is.
constexpr int64_t kPanelFloats = int64_t{1} << 22;  // 16 MiB

void widened_matmul(float* c, const uint16_t* a, const uint16_t* b, int64_t M, int64_t N, int64_t K,
                    bool trans_a, bool trans_b, bool accumulate, int64_t lda, int64_t ldb,
                    int64_t ldc) {
  // Per calling thread (the trainer's, a tensor-parallel rank's): grown to the largest operands.
  thread_local std::vector<float> af, bf;
  const int64_t ra = trans_a ? K : M, ca = trans_a ? M : K;
  widen(af, a, ra, ca, lda);
  const int64_t panel = std::max<int64_t>(1, std::min(N, kPanelFloats / K));
  for (int64_t n0 = 0; n0 < N; n0 += panel) {
    const int64_t nb = std::min(panel, N - n0);
    // B's panel: rows n0.. of B (N × K) when transposed, else columns n0.. of B (K × N).
    if (trans_b)
      widen(bf, b + n0 * ldb, nb, K, ldb);
    else
      widen(bf, b + n0, K, nb, ldb);
    matmul(c + n0, af.data(), bf.data(), M, nb, K, trans_a, trans_b, accumulate, ca,
           trans_b ? K : nb, ldc);
  }
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
  if (cpu::bf16_matmul_choice().path == cpu::Bf16MatmulPath::kWidened) {
    widened_matmul(c, a, b, M, N, K, trans_a, trans_b, accumulate, lda, ldb, ldc);
    return;
  }
  onednn::matmul(onednn::Operand::bf16, c, a, b, M, N, K, trans_a, trans_b, accumulate, lda, ldb,
                 ldc);
}

std::string matmul_bf16_path() {
  const cpu::Bf16MatmulChoice& c = cpu::bf16_matmul_choice();
  return c.kernel + " (" + c.why + ")";
}

}  // namespace sft::ops
