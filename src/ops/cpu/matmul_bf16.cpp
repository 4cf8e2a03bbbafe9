// bf16 × bf16 → f32 matmul, reference path: widens the operands to f32 (exact) and runs the
// f32 product, so results equal an f32 matmul of the bf16 values.
#include <cstddef>
#include <vector>

#include "core/half.h"
#include "ops/ops.h"

namespace sft::ops {

namespace {

std::vector<float> widen(const uint16_t* x, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = bf16_to_f32(x[r * ld + c]);
  return out;
}

}  // namespace

void matmul_bf16(float* c, const uint16_t* a, const uint16_t* b, int64_t M, int64_t N, int64_t K,
                 bool trans_a, bool trans_b, bool accumulate, int64_t lda, int64_t ldb,
                 int64_t ldc) {
  const int64_t ra = trans_a ? K : M, ca = trans_a ? M : K;
  const int64_t rb = trans_b ? N : K, cb = trans_b ? K : N;
  const std::vector<float> af = widen(a, ra, ca, lda ? lda : ca);
  const std::vector<float> bf = widen(b, rb, cb, ldb ? ldb : cb);
  matmul(c, af.data(), bf.data(), M, N, K, trans_a, trans_b, accumulate, ca, cb, ldc);
}

}  // namespace sft::ops
