// The AVX-512 bodies of attention_microkernel.h. Compiled with function-level target attributes
// (libsft is built without -march); every function here runs only after cpu::use_avx512().
// The register block and the 16 × 16 transpose are fma_register_block.h's, shared with the
// projection GEMM (gemm_microkernel.cpp); this file adds the tile walk and the causal skips.
#include "ops/cpu/attention_microkernel.h"

#include <immintrin.h>

#include <algorithm>

#include "ops/cpu/fma_register_block.h"

namespace sft::ops::cpu::attention_microkernel {

namespace {

using fma_block::Block;
using fma_block::first_lanes;
constexpr int kBlockRows = fma_block::kRows;
constexpr int64_t kBlockColumns = fma_block::kColumns;

}  // namespace

[[SFT_AVX512_TARGET]] void gemm(const Product& p) {
  if (p.M <= 0 || p.N <= 0) return;
  const auto& blocks =
      p.a_layout == ALayout::kRows ? fma_block::kBlocks<false> : fma_block::kBlocks<true>;
  const int64_t a_row = p.a_layout == ALayout::kRows ? p.lda : 1;
  // Column panels outside, row blocks inside: a panel of B stays in L1 while A streams past.
  for (int64_t n0 = 0; n0 < p.N; n0 += kBlockColumns)
    for (int64_t m0 = 0; m0 < p.M; m0 += kBlockRows) {
      const int64_t rows = std::min<int64_t>(kBlockRows, p.M - m0), last_row = m0 + rows - 1;
      int64_t n1 = std::min(p.N, n0 + kBlockColumns), k0 = 0, k1 = p.K;
      switch (p.skip) {
        case Skip::kNothing:
          break;
        case Skip::kColumnsPastDiagonal:
          n1 = std::min(n1, last_row + p.diagonal);
          break;
        case Skip::kDepthPastDiagonal:
          k1 = std::clamp<int64_t>(last_row + p.diagonal, 0, p.K);
          break;
        case Skip::kDepthBeforeDiagonal:
          k0 = std::clamp<int64_t>(m0 - p.diagonal + 1, 0, p.K);
          break;
      }
      if (n1 <= n0) continue;  // no column of this block is needed (nor written)
      const int64_t width = n1 - n0, vectors = (width + 15) / 16;
      // With K = 0 A and B may be null (nothing is read): no offset is applied to a null pointer.
      const Block blk{p.c + m0 * p.ldc + n0,
                      p.ldc,
                      p.a ? p.a + m0 * a_row : nullptr,
                      p.lda,
                      p.b ? p.b + n0 : nullptr,
                      p.ldb,
                      k0,
                      k1,
                      p.accumulate,
                      p.c_row_scale ? p.c_row_scale + m0 : nullptr,
                      first_lanes(width - 16 * (vectors - 1))};
      blocks[static_cast<size_t>(rows - 1)][static_cast<size_t>(vectors - 1)](blk);
    }
}

[[SFT_AVX512_TARGET]] void transpose(float* dst, int64_t ld_dst, const float* src, int64_t ld_src,
                                     int64_t rows, int64_t cols) {
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t nr = std::min<int64_t>(16, rows - r0);
    for (int64_t x0 = 0; x0 < cols; x0 += 16) {
      const int64_t nx = std::min<int64_t>(16, cols - x0);
      const __mmask16 in = first_lanes(nx), out = first_lanes(nr);
      __m512 t[16];
      for (int i = 0; i < 16; ++i)
        t[i] =
            i < nr ? _mm512_maskz_loadu_ps(in, src + (r0 + i) * ld_src + x0) : _mm512_setzero_ps();
      fma_block::transpose16(t);
      for (int x = 0; x < 16; ++x)
        if (x < nx) _mm512_mask_storeu_ps(dst + (x0 + x) * ld_dst + r0, out, t[x]);
    }
  }
}

}  // namespace sft::ops::cpu::attention_microkernel
