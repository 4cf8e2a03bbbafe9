// AMX-BF16 on the CPU: whether this process may use it, and the one tile product built on it.
//
// use_amx() is decided once per process: the CPU reports AMX-TILE and AMX-BF16 (CPUID leaf 7),
// AVX-512 is in use (cpu_features.h; SFT_CPU_ISA=generic turns both off) and Linux grants this
// process the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA; a kernel that
// refuses leaves us on the portable path instead of faulting on the first tile load), and
// oneDNN's ISA cap (ONEDNN_MAX_CPU_ISA) is unset, ALL or an AMX level: capped below AMX, the
// whole process runs as on a CPU without it.
//
// The tile configuration is per thread and other libraries (oneDNN) load their own, so a
// caller brackets its tile products with amx_begin() / amx_end() on the thread that runs them.
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

bool use_amx();

// Loads this thread's tile configuration (eight 16 × 64-byte tiles) / releases it.
void amx_begin();
void amx_end();

// C (M, N) fp32 = (or += with accumulate) A · B in fp32 accumulation, between amx_begin/end.
// A (M, K) bf16 bits, row-major, lda elements per row. B (K, N) in VNNI pairs: K/2 rows of N
// pairs (B[2r][n], B[2r + 1][n]), ldb bf16 elements per pair row. ldc floats per row of C.
// M and N multiples of 16, K a multiple of 32 (callers pad with zeros).
void gemm_bf16_amx(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* b,
                   int64_t ldb, int64_t M, int64_t N, int64_t K, bool accumulate);

// The same product on operands already packed as tiles (amx_pack.h), between amx_begin/end:
// every tile load reads 1 KiB contiguous, so no operand's row stride can alias in L1 (rows of
// 4 KiB or 12 KiB, Qwen3's K = 2048 / 6144 in bf16, would all fall in one L1 set); tiles should
// start on a 64-byte line (tile_buffer.h), else each of their rows straddles two.
// A: tiles of 16 rows × 32 k, tile (i, j) at a_tiles + (i·a_row_tiles + j)·512, so a k range of
// a wider packing is a_tiles advanced by its first k tile; B: VNNI tiles of 16 pair rows × 16
// columns, tile (i, j) at b_tiles + (i·KT + j)·512 (column tile i, k tile j).
// C (M, N) fp32, any M and N (edge tiles go through a bounce tile); KT k tiles are summed.
// Each output element sums its k tiles in ascending order, and C's fp32 tiles round-trip
// through memory exactly: the same bits for any blocking of M and N, for any thread count or
// panel width, and for K split into consecutive ranges summed with accumulate.
void gemm_bf16_amx_packed(float* c, int64_t ldc, const uint16_t* a_tiles, int64_t a_row_tiles,
                          const uint16_t* b_tiles, int64_t M, int64_t N, int64_t KT,
                          bool accumulate);

}  // namespace sft::ops::cpu
