// The blocking, packing and partition of gemm_microkernel.h around fma_register_block.h's block.
//
// Sizes, and why (measured with bench_gemm_shapes on the step's shapes, one thread, CPU time):
// C is read and written once per slice of K, so slices are long, kDepth = 256 steps (7% faster
// than 128, whose 32 KiB B panel fits L1 but doubles C's traffic; 384 within noise). Per run of
// kColumnRun = 512 columns and slice of K the run's B panels (256 × 512: 512 KiB) are packed once
// and C is swept kRowRun = 240 rows at a time, so the A strips (240 × 256: 240 KiB), C's block
// (480 KiB) and the B run stay in the 2 MiB L2 while each 64 KiB B panel serves 40 register
// blocks. Without the runs of rows (all M at once), the LM head's dW (M = 16384) and the 3072-row
// projections' dW stream C and A from memory once per slice.
#include "ops/cpu/gemm_microkernel.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "core/thread_pool.h"
#include "ops/cpu/fma_register_block.h"

namespace sft::ops::cpu::gemm_microkernel {

namespace {

using fma_block::first_lanes;
constexpr int64_t kDepth = 256;
constexpr int64_t kPanel = fma_block::kColumns;  // 64
constexpr int64_t kRowBlock = fma_block::kRows;  // 6
constexpr int64_t kColumnRun = 8 * kPanel;
constexpr int64_t kRowRun = 40 * kRowBlock;

// B's columns [n0, n0 + width) over steps [k0, k0 + depth) into panel (depth × 64, row stride 64).
[[SFT_AVX512_TARGET]] void pack_b(float* panel, const Gemm& g, int64_t k0, int64_t depth,
                                  int64_t n0, int64_t width) {
  if (!g.b_transposed) {
    for (int64_t k = 0; k < depth; ++k) {
      const float* src = g.b + (k0 + k) * g.ldb + n0;
      for (int64_t x = 0; x < width; x += 16) {
        const __mmask16 m = first_lanes(std::min<int64_t>(16, width - x));
        _mm512_store_ps(panel + k * kPanel + x, _mm512_maskz_loadu_ps(m, src + x));
      }
    }
    return;
  }
  // B stored (N, K): 16 × 16 blocks of its rows transposed into the panel's columns.
  for (int64_t x = 0; x < width; x += 16) {
    const int64_t rows = std::min<int64_t>(16, width - x);
    for (int64_t k = 0; k < depth; k += 16) {
      const int64_t steps = std::min<int64_t>(16, depth - k);
      const __mmask16 m = first_lanes(steps);
      __m512 t[16];
      for (int64_t i = 0; i < 16; ++i)
        t[i] = i < rows ? _mm512_maskz_loadu_ps(m, g.b + (n0 + x + i) * g.ldb + k0 + k)
                        : _mm512_setzero_ps();
      fma_block::transpose16(t);
      for (int64_t s = 0; s < steps; ++s) _mm512_store_ps(panel + (k + s) * kPanel + x, t[s]);
    }
  }
}

// A as the register block reads it: blocks of 6 rows, each (K × 6) with a step's 6 values
// adjacent, packed[b·6K + k·6 + i] = A(6b + i, k): one stream of broadcasts per block, whatever
// A's storage (the step's rows are 4 KiB multiples apart, which would put a block's 6 rows of A
// in one L1 set and evict the B panel).
const float* a_strip(const float* packed, int64_t K, int64_t m0, int64_t k0) {
  return packed + m0 * K + k0 * kRowBlock;
}

int64_t packed_a_floats(const Gemm& g) {
  return (g.M + kRowBlock - 1) / kRowBlock * kRowBlock * g.K;
}

// Rows [m0, m1) of A (m0 a multiple of 6) into their packed blocks.
[[SFT_AVX512_TARGET]] void pack_a(float* packed, const Gemm& g, int64_t m0, int64_t m1) {
  if (g.a_transposed) {
    // 16 blocks × 16 steps at a time: the 16 source rows' 96 floats stay in L1 while every block
    // takes its 6, instead of one 12 KiB-strided line per step and block.
    constexpr int64_t kGroup = 16 * kRowBlock, kSteps = 16;
    for (int64_t r0 = m0; r0 < m1; r0 += kGroup)
      for (int64_t k0 = 0; k0 < g.K; k0 += kSteps) {
        const int64_t k1 = std::min(g.K, k0 + kSteps);
        for (int64_t r = r0; r < std::min(m1, r0 + kGroup); r += kRowBlock) {
          const __mmask16 m = first_lanes(std::min<int64_t>(kRowBlock, g.M - r));
          float* dst = packed + r * g.K;
          for (int64_t k = k0; k < k1; ++k)
            _mm512_mask_storeu_ps(dst + k * kRowBlock, m,
                                  _mm512_maskz_loadu_ps(m, g.a + k * g.lda + r));
        }
      }
    return;
  }
  // Stored (M, K): 6 rows × 16 steps transposed at a time, the 6 values of each step stored.
  for (int64_t r = m0; r < m1; r += kRowBlock) {
    const int64_t rows = std::min<int64_t>(kRowBlock, g.M - r);
    const __mmask16 out = first_lanes(rows);
    float* dst = packed + r * g.K;
    for (int64_t k = 0; k < g.K; k += 16) {
      const int64_t steps = std::min<int64_t>(16, g.K - k);
      const __mmask16 in = first_lanes(steps);
      __m512 t[16];
      for (int64_t i = 0; i < 16; ++i)
        t[i] =
            i < rows ? _mm512_maskz_loadu_ps(in, g.a + (r + i) * g.lda + k) : _mm512_setzero_ps();
      fma_block::transpose16(t);
      for (int64_t s = 0; s < steps; ++s)
        _mm512_mask_storeu_ps(dst + (k + s) * kRowBlock, out, t[s]);
    }
  }
}

// Panels [p0, p1) of C: per run of columns and slice of K, the run's B panels packed once, then
// C swept a run of rows at a time (see the sizes above).
[[SFT_AVX512_TARGET]] void run_panels(const Gemm& g, const float* a, int64_t p0, int64_t p1) {
  alignas(64) static thread_local float panels[kDepth * kColumnRun];
  const int64_t n_end = std::min(g.N, p1 * kPanel);
  for (int64_t r0 = p0 * kPanel; r0 < n_end; r0 += kColumnRun) {
    const int64_t r1 = std::min(n_end, r0 + kColumnRun);
    for (int64_t k0 = 0; k0 < g.K; k0 += kDepth) {
      const int64_t depth = std::min(kDepth, g.K - k0);
      const bool accumulate = k0 > 0 || g.accumulate;
      for (int64_t n0 = r0; n0 < r1; n0 += kPanel)
        pack_b(panels + (n0 - r0) * kDepth, g, k0, depth, n0, std::min(kPanel, r1 - n0));
      for (int64_t i0 = 0; i0 < g.M; i0 += kRowRun) {
        const int64_t i1 = std::min(g.M, i0 + kRowRun);
        for (int64_t n0 = r0; n0 < r1; n0 += kPanel) {
          const int64_t width = std::min(kPanel, r1 - n0);
          const float* panel = panels + (n0 - r0) * kDepth;
          for (int64_t m0 = i0; m0 < i1; m0 += kRowBlock) {
            const int64_t rows = std::min(kRowBlock, g.M - m0);
            __mmask16 last;
            const fma_block::BlockFn fn = fma_block::block_for<true>(rows, width, last);
            fn({g.c + m0 * g.ldc + n0, g.ldc, a_strip(a, g.K, m0, k0), kRowBlock, panel, kPanel, 0,
                depth, accumulate, nullptr, last});
          }
        }
      }
    }
  }
}

}  // namespace

void gemm(const Gemm& g, Threads threads) {
  if (g.M <= 0 || g.N <= 0) return;
  if (g.K <= 0) {
    if (!g.accumulate)
      for (int64_t i = 0; i < g.M; ++i) std::fill(g.c + i * g.ldc, g.c + i * g.ldc + g.N, 0.0f);
    return;
  }
  ThreadPool& pool = default_thread_pool();
  const bool on_pool = threads == Threads::kPool && pool.size() > 1;
  // Per calling thread, grown to the largest A seen: no allocation once the step's shapes ran.
  thread_local std::vector<float> packed;
  if (packed.size() < static_cast<size_t>(packed_a_floats(g)))
    packed.resize(static_cast<size_t>(packed_a_floats(g)));
  float* const dst = packed.data();  // (a worker's `packed` would be its own, empty)
  const int64_t blocks = (g.M + kRowBlock - 1) / kRowBlock;
  if (on_pool)
    pool.parallel_for(static_cast<size_t>(blocks), [&](size_t, size_t b0, size_t b1) {
      pack_a(dst, g, static_cast<int64_t>(b0) * kRowBlock,
             std::min(g.M, static_cast<int64_t>(b1) * kRowBlock));
    });
  else
    pack_a(dst, g, 0, g.M);
  const int64_t panels = (g.N + kPanel - 1) / kPanel;
  if (on_pool)
    pool.parallel_for(static_cast<size_t>(panels), [&](size_t, size_t p0, size_t p1) {
      run_panels(g, dst, static_cast<int64_t>(p0), static_cast<int64_t>(p1));
    });
  else
    run_panels(g, dst, 0, panels);
}

}  // namespace sft::ops::cpu::gemm_microkernel
