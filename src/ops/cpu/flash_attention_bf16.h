// Shared pieces of the bf16 tiled attention (flash_attention_bf16_{forward,backward}.cpp): the
// tile product chosen at run time and the packers that lay bf16 operands out for it.
//
// Every product is C (fp32) = A · B with A row-major bf16 and B in VNNI pairs (two consecutive
// K rows interleaved per column), which is what AMX's tdpbf16ps reads; the portable product
// reads the same layouts, so the drivers do not know which one runs. Operands are padded with
// zeros: M and N to 16, K to 32 (AMX's tile shape), so partial tiles and odd head dims need no
// special case. Two layouts feed B:
//   pack_transposed: B = Yᵀ for X · Yᵀ (Y rows become columns; the 32-bit pairs of a row stay
//                    together): S = Q Kᵀ, dP = dO Vᵀ;
//   pack_interleaved: B = Y for X · Y (rows 2r and 2r + 1 interleaved): P V, Pᵀ dO, dSᵀ Q, dS K.
// Keys and values are packed once per call (pack_kv: every key tile of every segment and kv
// head, before the work items run), so no work item repacks a tile another one also reads.
// The helpers are always_inline so the AVX-512 drivers compile them for AVX-512.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>

#include "core/half.h"
#include "ops/attention.h"
#include "ops/cpu/attention_microkernel.h"

namespace sft::ops::flash_bf16 {

using bf16 = uint16_t;

inline constexpr int64_t round_up(int64_t n, int64_t m) {
  return (n + m - 1) / m * m;
}

[[gnu::always_inline]] inline float widen(bf16 h) {
  return std::bit_cast<float>(uint32_t{h} << 16);
}

// Round to nearest even (NaN stays NaN), branch-free so the loops vectorise.
[[gnu::always_inline]] inline bf16 narrow(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  return static_cast<bf16>(nan ? ((bits >> 16) | 0x40u) : rounded);
}

[[gnu::always_inline]] inline bf16 to_bf16(bf16 x) {
  return x;
}
[[gnu::always_inline]] inline bf16 to_bf16(float x) {
  return narrow(x);
}

// The run-time choice: AMX (amx.h) when use_amx(), else with AVX-512 the widened product below,
// else a portable loop; `avx512` tells the drivers which build of theirs to run.
// A product may leave out the terms the causal diagonal zeroes (attention_microkernel.h's Skip,
// diagonal: the keys the product's first query row sees): the widened product does, skipping
// about a third of a diagonal tile's work; AMX and the portable loop compute them (they are 0).
// Either way C's values are the same; with kColumnsPastDiagonal the columns no query row sees
// may be left unwritten, so the drivers read only the keys each row sees.
struct Causal {
  cpu::attention_microkernel::Skip skip = cpu::attention_microkernel::Skip::kNothing;
  int64_t diagonal = 0;
};
using GemmFn = void (*)(float* c, int64_t ldc, const bf16* a, int64_t lda, const bf16* b,
                        int64_t ldb, int64_t M, int64_t N, int64_t K, bool accumulate,
                        Causal causal);
struct TileGemm {
  void (*begin)();  // once per work item, on its thread (AMX: the tile configuration)
  void (*end)();
  GemmFn gemm;
  bool avx512;
  const char* name;  // "amx", "avx512 widened", "generic"
};
const TileGemm& tile_gemm();

// The tile product of a CPU with AVX-512 but no AMX (flash_attention_bf16_widened.cpp): A and B
// widened exactly to fp32, then the fp32 attention's register-blocked product. Callers checked
// cpu::use_avx512().
void gemm_widened_avx512(float* c, int64_t ldc, const bf16* a, int64_t lda, const bf16* b,
                         int64_t ldb, int64_t M, int64_t N, int64_t K, bool accumulate,
                         Causal causal);

// dst (rows_pad, cols_pad) row-major bf16 = src rows [0, rows) × cols [0, cols) (ld elements per
// source row), rounded to bf16 when src is float; zeros elsewhere.
template <typename S>
[[gnu::always_inline]] inline void pack_rows(bf16* dst, const S* src, int64_t ld, int64_t rows,
                                             int64_t cols, int64_t rows_pad, int64_t cols_pad) {
  for (int64_t r = 0; r < rows_pad; ++r) {
    bf16* d = dst + r * cols_pad;
    if (r < rows) {
      const S* s = src + r * ld;
      for (int64_t x = 0; x < cols; ++x) d[x] = to_bf16(s[x]);
      for (int64_t x = cols; x < cols_pad; ++x) d[x] = 0;
    } else {
      for (int64_t x = 0; x < cols_pad; ++x) d[x] = 0;
    }
  }
}

// B = Yᵀ for Y (n, k) (ld elements per row): k_pad / 2 pair rows of n_pad pairs,
// dst[r · 2 n_pad + 2 j + t] = Y[j][2r + t] (0 outside Y). A transpose of 32-bit pairs: each
// (Y[j][2r], Y[j][2r + 1]) moves as one word.
[[gnu::always_inline]] inline void pack_transposed(bf16* dst, const bf16* y, int64_t ld, int64_t n,
                                                   int64_t k, int64_t n_pad, int64_t k_pad) {
  const int64_t ldb = 2 * n_pad, whole = k / 2;
  for (int64_t r = 0; r < whole; ++r) {
    bf16* d = dst + r * ldb;
    for (int64_t j = 0; j < n; ++j) std::memcpy(d + 2 * j, y + j * ld + 2 * r, 4);
    for (int64_t x = 2 * n; x < ldb; ++x) d[x] = 0;
  }
  for (int64_t r = whole; r < k_pad / 2; ++r) {  // an odd k's last column, then zeros
    bf16* d = dst + r * ldb;
    for (int64_t j = 0; j < n; ++j) {
      d[2 * j] = 2 * r < k ? y[j * ld + 2 * r] : 0;
      d[2 * j + 1] = 0;
    }
    for (int64_t x = 2 * n; x < ldb; ++x) d[x] = 0;
  }
}

// B = Y for Y (k, n) (ld elements per row): k_pad / 2 pair rows of n_pad pairs,
// dst[r · 2 n_pad + 2 x + t] = Y[2r + t][x] (0 outside Y).
template <typename S>
[[gnu::always_inline]] inline void pack_interleaved(bf16* dst, const S* y, int64_t ld, int64_t k,
                                                    int64_t n, int64_t k_pad, int64_t n_pad) {
  const int64_t ldb = 2 * n_pad;
  for (int64_t r = 0; r < k_pad / 2; ++r) {
    bf16* d = dst + r * ldb;
    const int64_t row = 2 * r;
    if (row + 1 < k) {
      const S* s0 = y + row * ld;
      const S* s1 = s0 + ld;
      for (int64_t x = 0; x < n; ++x) {
        d[2 * x] = to_bf16(s0[x]);
        d[2 * x + 1] = to_bf16(s1[x]);
      }
    } else if (row < k) {
      const S* s0 = y + row * ld;
      for (int64_t x = 0; x < n; ++x) {
        d[2 * x] = to_bf16(s0[x]);
        d[2 * x + 1] = 0;
      }
    } else {
      for (int64_t x = 0; x < n; ++x) d[2 * x] = d[2 * x + 1] = 0;
    }
    for (int64_t x = 2 * n; x < ldb; ++x) d[x] = 0;
  }
}

// bf16 transpose: dst[x · ldd + i] = src[i · lds + x] for i < rows, x < cols.
[[gnu::always_inline]] inline void transpose(bf16* dst, int64_t ldd, const bf16* src, int64_t lds,
                                             int64_t rows, int64_t cols) {
  constexpr int64_t kBlock = 32;  // rows per pass: the source block stays in L1
  for (int64_t i0 = 0; i0 < rows; i0 += kBlock) {
    const int64_t i1 = std::min(rows, i0 + kBlock);
    for (int64_t x = 0; x < cols; ++x)
      for (int64_t i = i0; i < i1; ++i) dst[x * ldd + i] = src[i * lds + x];
  }
}

// Where the packed key tiles of one call live: for segment s, key tile t (keys
// [t·Bk, min((t + 1)·Bk, k_len)) of the segment) and kv head g, one block of `elems` bf16 at
// base + ((first_tile[s] + t) · Hkv + g) · elems, holding the layouts whose offset is ≥ 0:
//   kt: Kᵀ pairs (Dk / 2, 2 Bk32)   vt: Vᵀ pairs (Dk / 2, 2 Bk32)
//   kb: K row pairs (Bk32 / 2, 2 Dn)  vb: V row pairs (Bk32 / 2, 2 Dn)
struct KvLayout {
  int64_t Bk = 0, Bk32 = 0, Dk = 0, Dn = 0;
  int64_t kt = -1, vt = -1, kb = -1, vb = -1;
  int64_t elems = 0;
  // forward: kt, vb; backward: kt, vt, kb.
  static KvLayout make(int64_t Bk, int64_t D, bool backward);
};

// first_tile (nseg + 1 entries) = the running tile count per segment; returns the total.
int64_t count_kv_tiles(std::span<const AttentionSegment> segments, int64_t Bk, int64_t* first_tile);

// Packs every block (see KvLayout) on up to `slots` threads.
void pack_kv(bf16* base, const int64_t* first_tile, const bf16* k, const bf16* v,
             std::span<const AttentionSegment> segments, const AttentionDims& dims,
             const KvLayout& layout, int64_t slots);

inline const bf16* kv_block(const bf16* base, const int64_t* first_tile, int64_t seg, int64_t tile,
                            int64_t g, int64_t Hkv, const KvLayout& layout) {
  return base + ((first_tile[seg] + tile) * Hkv + g) * layout.elems;
}

}  // namespace sft::ops::flash_bf16
