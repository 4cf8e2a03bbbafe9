// AMX permission, tile configuration and the bf16 tile product (see amx.h). The product works on
// blocks of 2 × 2 output tiles (32 × 32 floats): tiles 0–3 accumulate, 4–5 hold A's rows, 6–7
// B's columns, so each A and B tile loaded feeds two tdpbf16ps. Edge blocks use 1 × 2, 2 × 1 or
// 1 × 1. The K loop runs in ascending order, so a given input always gives the same bits.
#include "ops/cpu/amx.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "ops/cpu/cpu_features.h"

namespace sft::ops::cpu {

namespace {

constexpr long kReqXcompPerm = 0x1023;  // arch_prctl ARCH_REQ_XCOMP_PERM
constexpr long kXtiledata = 18;         // XFEATURE_XTILEDATA

// oneDNN's run-time cap (ONEDNN_MAX_CPU_ISA, or its older name DNNL_MAX_CPU_ISA): a value without
// "AMX" (AVX512_CORE_BF16, AVX2, ...) keeps oneDNN off AMX, and we follow it, so one variable
// gives a faithful no-AMX run of the whole step (torch's bundled oneDNN reads it too).
bool onednn_isa_caps_amx_off() {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (cap == nullptr || *cap == '\0') cap = std::getenv("DNNL_MAX_CPU_ISA");
  if (cap == nullptr || *cap == '\0') return false;
  const std::string_view value(cap);
  return value != "ALL" && value.find("AMX") == std::string_view::npos;
}

bool cpu_has_amx_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return ((d >> 22) & 1) && ((d >> 24) & 1);  // AMX-BF16, AMX-TILE
}

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

#define SFT_AMX [[gnu::target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq")]]

// One block of MT × NT output tiles at c (16 × 16 floats each).
template <int MT, int NT>
SFT_AMX [[gnu::always_inline]] inline void block(float* c, int64_t ldc, const uint16_t* a,
                                                 int64_t lda, const uint16_t* b, int64_t ldb,
                                                 int64_t K, bool accumulate) {
  const int64_t sc = ldc * 4, sa = lda * 2, sb = ldb * 2;
  float* c1 = c + 16 * ldc;
  if (accumulate) {
    _tile_loadd(0, c, sc);
    if constexpr (NT == 2) _tile_loadd(1, c + 16, sc);
    if constexpr (MT == 2) _tile_loadd(2, c1, sc);
    if constexpr (MT == 2 && NT == 2) _tile_loadd(3, c1 + 16, sc);
  } else {
    _tile_zero(0);
    if constexpr (NT == 2) _tile_zero(1);
    if constexpr (MT == 2) _tile_zero(2);
    if constexpr (MT == 2 && NT == 2) _tile_zero(3);
  }
  for (int64_t k0 = 0; k0 < K; k0 += 32) {
    const uint16_t* bk = b + (k0 / 2) * ldb;
    _tile_loadd(4, a + k0, sa);
    _tile_loadd(6, bk, sb);
    if constexpr (NT == 2) _tile_loadd(7, bk + 32, sb);
    if constexpr (MT == 2) _tile_loadd(5, a + 16 * lda + k0, sa);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NT == 2) _tile_dpbf16ps(1, 4, 7);
    if constexpr (MT == 2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (MT == 2 && NT == 2) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, sc);
  if constexpr (NT == 2) _tile_stored(1, c + 16, sc);
  if constexpr (MT == 2) _tile_stored(2, c1, sc);
  if constexpr (MT == 2 && NT == 2) _tile_stored(3, c1 + 16, sc);
}

// A C tile's place: in C itself, or a bounce tile where C's edge leaves it partial.
struct CTile {
  float* p;
  int64_t ld;  // floats per row
};

// One block of MT × NT output tiles on packed operands over KT k tiles: A tiles a0 (rows 0–15)
// and a0 + a_next (rows 16–31), B tiles b0 and b0 + KT·512. Tiles are not renamed, so a
// load into a tile waits for the products still reading it: each product is issued right after
// the loads it needs, and the tiles two k steps ahead are prefetched into L1 (from L2, where
// the panel and the A strip live) so that the loads hit L1.
template <int MT, int NT>
SFT_AMX [[gnu::always_inline]] inline void packed_block(const CTile (&c)[2][2], const uint16_t* a0,
                                                        int64_t a_next, const uint16_t* b0,
                                                        int64_t KT, bool accumulate) {
  constexpr int64_t kStride = 64;  // bytes per tile row
  constexpr int64_t kAhead = 2;    // k steps
  const int64_t next = KT * 512;
  if (accumulate) {
    _tile_loadd(0, c[0][0].p, c[0][0].ld * 4);
    if constexpr (NT == 2) _tile_loadd(1, c[0][1].p, c[0][1].ld * 4);
    if constexpr (MT == 2) _tile_loadd(2, c[1][0].p, c[1][0].ld * 4);
    if constexpr (MT == 2 && NT == 2) _tile_loadd(3, c[1][1].p, c[1][1].ld * 4);
  } else {
    _tile_zero(0);
    if constexpr (NT == 2) _tile_zero(1);
    if constexpr (MT == 2) _tile_zero(2);
    if constexpr (MT == 2 && NT == 2) _tile_zero(3);
  }
  for (int64_t j = 0; j < KT; ++j) {
    const uint16_t* a = a0 + j * 512;
    const uint16_t* b = b0 + j * 512;
    if (j + kAhead < KT) {
      const char* pa = reinterpret_cast<const char*>(a + kAhead * 512);
      const char* pb = reinterpret_cast<const char*>(b + kAhead * 512);
      for (int l = 0; l < 1024; l += 64) {
        _mm_prefetch(pa + l, _MM_HINT_T0);
        _mm_prefetch(pb + l, _MM_HINT_T0);
        if constexpr (NT == 2) _mm_prefetch(pb + 2 * next + l, _MM_HINT_T0);
        if constexpr (MT == 2) _mm_prefetch(pa + 2 * a_next + l, _MM_HINT_T0);
      }
    }
    _tile_loadd(4, a, kStride);
    _tile_loadd(6, b, kStride);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NT == 2) {
      _tile_loadd(7, b + next, kStride);
      _tile_dpbf16ps(1, 4, 7);
    }
    if constexpr (MT == 2) {
      _tile_loadd(5, a + a_next, kStride);
      _tile_dpbf16ps(2, 5, 6);
    }
    if constexpr (MT == 2 && NT == 2) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c[0][0].p, c[0][0].ld * 4);
  if constexpr (NT == 2) _tile_stored(1, c[0][1].p, c[0][1].ld * 4);
  if constexpr (MT == 2) _tile_stored(2, c[1][0].p, c[1][0].ld * 4);
  if constexpr (MT == 2 && NT == 2) _tile_stored(3, c[1][1].p, c[1][1].ld * 4);
}

SFT_AMX void load_config() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
}

SFT_AMX void release() {
  _tile_release();
}

}  // namespace

bool use_amx() {
  static const bool on = [] {
    if (!use_avx512() || !cpu_has_amx_bf16() || onednn_isa_caps_amx_off()) return false;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtiledata) == 0;
  }();
  return on;
}

void amx_begin() {
  load_config();
}

void amx_end() {
  release();
}

SFT_AMX void gemm_bf16_amx(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* b,
                           int64_t ldb, int64_t M, int64_t N, int64_t K, bool accumulate) {
  for (int64_t m0 = 0; m0 < M; m0 += 32) {
    const bool two_m = m0 + 32 <= M;
    const uint16_t* am = a + m0 * lda;
    for (int64_t n0 = 0; n0 < N; n0 += 32) {
      const bool two_n = n0 + 32 <= N;
      float* cb = c + m0 * ldc + n0;
      const uint16_t* bn = b + 2 * n0;
      if (two_m && two_n)
        block<2, 2>(cb, ldc, am, lda, bn, ldb, K, accumulate);
      else if (two_m)
        block<2, 1>(cb, ldc, am, lda, bn, ldb, K, accumulate);
      else if (two_n)
        block<1, 2>(cb, ldc, am, lda, bn, ldb, K, accumulate);
      else
        block<1, 1>(cb, ldc, am, lda, bn, ldb, K, accumulate);
    }
  }
}

// Rows of A outer: a 32-row strip of A stays in cache while the panel's columns pass it.
SFT_AMX void gemm_bf16_amx_packed(float* c, int64_t ldc, const uint16_t* a_tiles,
                                  int64_t a_row_tiles, const uint16_t* b_tiles, int64_t M,
                                  int64_t N, int64_t KT, bool accumulate) {
  const int64_t MT = (M + 15) / 16, NT = (N + 15) / 16;
  alignas(64) float bounce[2][2][256];
  for (int64_t i = 0; i < MT; i += 2) {
    const int mt = i + 1 < MT ? 2 : 1;
    for (int64_t t = 0; t < NT; t += 2) {
      const int nt = t + 1 < NT ? 2 : 1;
      CTile tiles[2][2] = {};
      bool edge = false;
      for (int u = 0; u < mt; ++u)
        for (int v = 0; v < nt; ++v) {
          const int64_t r0 = (i + u) * 16, c0 = (t + v) * 16;
          const int64_t rows = std::min<int64_t>(16, M - r0), cols = std::min<int64_t>(16, N - c0);
          float* at = c + r0 * ldc + c0;
          if (rows == 16 && cols == 16) {
            tiles[u][v] = {at, ldc};
            continue;
          }
          edge = true;
          float* b = bounce[u][v];
          std::fill(b, b + 256, 0.0f);
          if (accumulate)
            for (int64_t r = 0; r < rows; ++r)
              std::copy(at + r * ldc, at + r * ldc + cols, b + r * 16);
          tiles[u][v] = {b, 16};
        }
      const uint16_t* a0 = a_tiles + i * a_row_tiles * 512;
      const uint16_t* b0 = b_tiles + t * KT * 512;
      const int64_t a_next = a_row_tiles * 512;
      if (mt == 2 && nt == 2)
        packed_block<2, 2>(tiles, a0, a_next, b0, KT, accumulate);
      else if (mt == 2)
        packed_block<2, 1>(tiles, a0, a_next, b0, KT, accumulate);
      else if (nt == 2)
        packed_block<1, 2>(tiles, a0, a_next, b0, KT, accumulate);
      else
        packed_block<1, 1>(tiles, a0, a_next, b0, KT, accumulate);
      if (!edge) continue;
      for (int u = 0; u < mt; ++u)
        for (int v = 0; v < nt; ++v) {
          if (tiles[u][v].p != bounce[u][v]) continue;
          const int64_t r0 = (i + u) * 16, c0 = (t + v) * 16;
          const int64_t rows = std::min<int64_t>(16, M - r0), cols = std::min<int64_t>(16, N - c0);
          for (int64_t r = 0; r < rows; ++r)
            std::copy(bounce[u][v] + r * 16, bounce[u][v] + r * 16 + cols, c + (r0 + r) * ldc + c0);
        }
    }
  }
}

#undef SFT_AMX

}  // namespace sft::ops::cpu
