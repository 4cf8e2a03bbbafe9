// LoRA's two backward products over g in one pass on AMX tiles (see lora_backward_amx.h).
//
// Work split: O in tasks of kTaskCols columns; a task walks all of N in blocks of 32 rows and
// its columns in k tiles of 32. Each 32 × 32 block of g is loaded once into zmm registers and
// stored twice into an L1 scratch: as two plain tiles (rows 0–15, 16–31: A of g · B) and as
// two VNNI tiles (rows 2p and 2p + 1 interleaved: B of uᵀ · g). Tiles: 0, 1 du's two 16-row
// tiles (kept across the task's k tiles), 2 uᵀ of the row block, 3 a dBᵀ tile (round trip
// through the task's accumulator), 4 a VNNI g tile, 5 B's VNNI tile, 6, 7 plain g tiles.
// unpacklo/hi_epi16 interleave within 128-bit lanes, so a VNNI tile's column c holds g's
// column 8·(c / 4) + 4·h + c % 4 of the block (h = 0 lo, 1 hi); the write-back undoes it.
#include "ops/cpu/lora_backward_amx.h"

#include <immintrin.h>

#include <algorithm>

#include "ops/cpu/amx.h"
#include "ops/cpu/tile_buffer.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

// Columns of O per task. du's sum over O is split here, so it is a constant: the same bits for
// any thread count. 256 gives two tasks or more a thread on Qwen3's narrowest projections
// (k/v at 1024) while the task's dBᵀ accumulator (16 KiB) stays in L1.
constexpr int64_t kTaskCols = 256;
constexpr int64_t kBlock = 32;     // rows of g per block = columns per k tile
constexpr int64_t kTile = 512;     // bf16 values in a 16 × 64-byte tile
constexpr int64_t kTileF32 = 256;  // floats in a 16 × 16 fp32 tile
constexpr int64_t kRankSlab = 16;  // u's and B's columns per pass: one tile's width

#define SFT_AMX [[gnu::target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq")]]

int64_t blocks_of(int64_t n) {
  return (n + kBlock - 1) / kBlock;
}

// One 16-column slab of the rank and everything the tasks share.
struct Slab {
  float* db;
  int64_t lddb;
  const uint16_t* g;
  int64_t ldg;
  const uint16_t* ut;  // uᵀ tiles, one a row block: 16 rows (u's columns) × 32 values (g's rows)
  const uint16_t* b;
  int64_t ldb;
  float* partials;  // du's partial sums, a task's (n_pad, 16) after another
  int64_t N, n_pad, O, rs;
};

// uᵀ of a slab as tiles; zero past N and past the slab's rs columns.
void pack_ut(CacheLineVector<uint16_t>& ut, const uint16_t* u, int64_t ldu, int64_t N, int64_t rs) {
  ut.assign(static_cast<size_t>(blocks_of(N) * kTile), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < rs; ++j)
      ut[static_cast<size_t>((n / kBlock) * kTile + j * kBlock + n % kBlock)] = u[n * ldu + j];
}

// B's rows [o0, o0 + cols) as VNNI tiles, one per k tile: pair row p holds rows 2p, 2p + 1.
void pack_b(CacheLineVector<uint16_t>& bp, const Slab& s, int64_t o0, int64_t cols) {
  bp.assign(static_cast<size_t>(blocks_of(cols) * kTile), 0);
  for (int64_t o = 0; o < cols; ++o)
    for (int64_t j = 0; j < s.rs; ++j)
      bp[static_cast<size_t>((o / kBlock) * kTile + (o % kBlock / 2) * kBlock + 2 * j + o % 2)] =
          s.b[(o0 + o) * s.ldb + j];
}

// A worker's scratch, reused across calls (no allocation per step once sized).
struct TaskScratch {
  CacheLineVector<uint16_t> bp, block;
  CacheLineVector<float> acc;
};

SFT_AMX void run_task(const Slab& s, int64_t task, TaskScratch& t) {
  const int64_t o0 = task * kTaskCols, cols = std::min(kTaskCols, s.O - o0);
  const int64_t kts = blocks_of(cols);
  pack_b(t.bp, s, o0, cols);
  t.acc.assign(static_cast<size_t>(kts * 2 * kTileF32), 0.0f);
  t.block.resize(static_cast<size_t>(4 * kTile));
  uint16_t* vnni_lo = t.block.data();
  uint16_t* vnni_hi = vnni_lo + kTile;
  uint16_t* plain = vnni_lo + 2 * kTile;  // rows 0–15, then 16–31
  float* part = s.partials + task * s.n_pad * kRankSlab;
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t n0 = 0; n0 < s.N; n0 += kBlock) {
    const int64_t rows = std::min(kBlock, s.N - n0);
    _tile_zero(0);
    _tile_zero(1);
    _tile_loadd(2, s.ut + (n0 / kBlock) * kTile, 64);
    for (int64_t kt = 0; kt < kts; ++kt) {
      const int64_t width = std::min(kBlock, cols - kt * kBlock);
      const __mmask32 mask = width == kBlock ? ~__mmask32{0} : (__mmask32{1} << width) - 1;
      const uint16_t* gb = s.g + n0 * s.ldg + o0 + kt * kBlock;
      for (int64_t p = 0; p < kBlock / 2; ++p) {
        const __m512i even =
            2 * p < rows ? _mm512_maskz_loadu_epi16(mask, gb + 2 * p * s.ldg) : zero;
        const __m512i odd =
            2 * p + 1 < rows ? _mm512_maskz_loadu_epi16(mask, gb + (2 * p + 1) * s.ldg) : zero;
        _mm512_store_si512(plain + 2 * p * kBlock, even);
        _mm512_store_si512(plain + (2 * p + 1) * kBlock, odd);
        _mm512_store_si512(vnni_lo + p * kBlock, _mm512_unpacklo_epi16(even, odd));
        _mm512_store_si512(vnni_hi + p * kBlock, _mm512_unpackhi_epi16(even, odd));
      }
      // dBᵀ (16 × 16 of the block's columns) += uᵀ · g, the two halves of the k tile.
      float* acc = t.acc.data() + kt * 2 * kTileF32;
      _tile_loadd(3, acc, 64);
      _tile_loadd(4, vnni_lo, 64);
      _tile_dpbf16ps(3, 2, 4);
      _tile_stored(3, acc, 64);
      _tile_loadd(3, acc + kTileF32, 64);
      _tile_loadd(4, vnni_hi, 64);
      _tile_dpbf16ps(3, 2, 4);
      _tile_stored(3, acc + kTileF32, 64);
      // du's two row tiles += g · B over the k tile.
      _tile_loadd(5, t.bp.data() + kt * kTile, 64);
      _tile_loadd(6, plain, 64);
      _tile_dpbf16ps(0, 6, 5);
      _tile_loadd(7, plain + 16 * kBlock, 64);
      _tile_dpbf16ps(1, 7, 5);
    }
    _tile_stored(0, part + n0 * kRankSlab, 64);
    _tile_stored(1, part + (n0 + 16) * kRankSlab, 64);
  }
  // dB += the accumulated dBᵀ, columns back in g's order.
  for (int64_t kt = 0; kt < kts; ++kt)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t c = 0; c < 16; ++c) {
        const int64_t o = kt * kBlock + 8 * (c / 4) + 4 * h + c % 4;
        if (o >= cols) continue;
        const float* a = t.acc.data() + (kt * 2 + h) * kTileF32 + c;
        float* d = s.db + (o0 + o) * s.lddb;
        for (int64_t j = 0; j < s.rs; ++j) d[j] += a[j * 16];
      }
}

void run_slab(const Slab& s) {
  const int64_t tasks = (s.O + kTaskCols - 1) / kTaskCols;
  parallel_for_rows(tasks, 1, [&](int64_t begin, int64_t end) {
    thread_local TaskScratch scratch;
    amx_begin();
    for (int64_t task = begin; task < end; ++task) run_task(s, task, scratch);
    amx_end();
  });
}

}  // namespace

bool lora_backward_amx_serves() {
  return use_amx();
}

void lora_backward_amx(float* db, int64_t lddb, float* du, int64_t lddu, const uint16_t* g,
                       int64_t ldg, const uint16_t* u, int64_t ldu, const uint16_t* b, int64_t ldb,
                       int64_t N, int64_t O, int64_t r) {
  if (N <= 0 || O <= 0 || r <= 0) return;
  // The calling thread's: grown to the largest adapter, then reused.
  thread_local CacheLineVector<uint16_t> ut;
  thread_local CacheLineVector<float> partials;
  const int64_t tasks = (O + kTaskCols - 1) / kTaskCols, n_pad = blocks_of(N) * kBlock;
  partials.resize(static_cast<size_t>(tasks * n_pad * kRankSlab));
  // By pointer: a thread_local named inside a lambda would be the worker's own (empty) one.
  const float* part = partials.data();
  for (int64_t j0 = 0; j0 < r; j0 += kRankSlab) {
    const int64_t rs = std::min(kRankSlab, r - j0);
    pack_ut(ut, u + j0, ldu, N, rs);
    const Slab s{db + j0, lddb, g, ldg, ut.data(), b + j0, ldb, partials.data(), N, n_pad, O, rs};
    run_slab(s);
    // du = the tasks' partial sums, added in task order.
    parallel_for_rows(N, 64, [&](int64_t n_begin, int64_t n_end) {
      for (int64_t n = n_begin; n < n_end; ++n)
        for (int64_t j = 0; j < rs; ++j) {
          float sum = part[n * kRankSlab + j];
          for (int64_t task = 1; task < tasks; ++task)
            sum += part[(task * n_pad + n) * kRankSlab + j];
          du[n * lddu + j0 + j] = sum;
        }
    });
  }
}

}  // namespace sft::ops::cpu
