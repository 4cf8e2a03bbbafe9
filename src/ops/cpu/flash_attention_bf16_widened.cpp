// The bf16 attention's tile product on AVX-512 CPUs without AMX (flash_attention_bf16.h,
// tile_gemm): the bf16 operands widened (exactly) to fp32 and multiplied by the fp32 attention's
// register-blocked product (attention_microkernel.h), the --bf16 contract of bf16_matmul_path.h
// applied to the attention's tiles.
//
// Why widen rather than multiply pairs: on an Intel core without AMX, vdpbf16ps runs at half the
// fp32 FMA rate and a pairwise loop over the VNNI layout does not register-block at all. A
// tile's operands are widened into per-thread fp32 copies once per product (A row-major, B's VNNI
// pairs split back into its rows), O(M·K + K·N) work against the product's M·N·K, and the
// product then runs at the fp32 kernel's rate, leaving out the causal diagonal's zero terms as
// the fp32 attention does (Causal).
//
// Numerics: every product is one of two bf16 values, exact in fp32; each C element is one chain
// of fused multiply-adds in ascending k, C's old value added once at its end (accumulate), as
// attention_microkernel.h states: fixed by the element and K, so bit-identical for any thread
// count.
#include <immintrin.h>

#include "ops/cpu/attention_microkernel.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/flash_attention_bf16.h"
#include "ops/cpu/fma_register_block.h"
#include "ops/cpu/tile_buffer.h"

namespace sft::ops::flash_bf16 {

namespace {

// dst (2 · pairs, n) fp32 row-major = the VNNI pairs (pairs rows of n pairs, ld bf16 per pair
// row): a pair's low half is row 2r, its high half row 2r + 1. n a multiple of 16.
[[SFT_AVX512_TARGET]] void widen_pairs(float* dst, const bf16* src, int64_t ld, int64_t pairs,
                                       int64_t n) {
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t r = 0; r < pairs; ++r)
    for (int64_t x = 0; x < n; x += 16) {
      const __m512i p = _mm512_loadu_si512(src + r * ld + 2 * x);
      _mm512_storeu_si512(dst + 2 * r * n + x, _mm512_slli_epi32(p, 16));
      _mm512_storeu_si512(dst + (2 * r + 1) * n + x, _mm512_and_si512(p, high));
    }
}

}  // namespace

void gemm_widened_avx512(float* c, int64_t ldc, const bf16* a, int64_t lda, const bf16* b,
                         int64_t ldb, int64_t M, int64_t N, int64_t K, bool accumulate,
                         Causal causal) {
  // Per thread (the pool's workers run the tiles), grown to the largest tile: no allocation
  // after the first call of a shape.
  thread_local cpu::CacheLineVector<float> aw, bw;
  if (aw.size() < static_cast<size_t>(M * K)) aw.resize(static_cast<size_t>(M * K));
  if (bw.size() < static_cast<size_t>(K * N)) bw.resize(static_cast<size_t>(K * N));
  for (int64_t r = 0; r < M; ++r) cpu::widen_row_from_bf16(aw.data() + r * K, a + r * lda, K);
  widen_pairs(bw.data(), b, ldb, K / 2, N);
  cpu::attention_microkernel::gemm({.c = c,
                                    .ldc = ldc,
                                    .a = aw.data(),
                                    .lda = K,
                                    .b = bw.data(),
                                    .ldb = N,
                                    .M = M,
                                    .N = N,
                                    .K = K,
                                    .accumulate = accumulate,
                                    .skip = causal.skip,
                                    .diagonal = causal.diagonal});
}

}  // namespace sft::ops::flash_bf16
