// Fused LM head + cross-entropy, bf16 mixed precision, as torch autocast computes it: bf16
// operands, fp32 accumulation, logits rounded to bf16 (autocast's lm_head output) and then
// widened for the softmax statistics (fp32 exp, double sums, as transformers' loss upcasts),
// dlogits rounded to bf16 for the two gradient products (autocast's bf16 grad). See
// ops/lm_head_ce.h for the contract (vocabulary shards included).
//
// Layout, and why it differs from the float path's (lm_head_ce.cpp): logits held in bf16 cost
// half of fp32, so a chunk holds every scored row of a micro-batch (up to kLogitBudget bytes:
// 1766 rows at V = 151936), and the 151936 × C weight and its fp32 gradient stream through
// memory once per call instead of once per 512-row chunk. Per chunk:
//   Z (m × V, bf16)   = X Wᵀ, one vocabulary block of kLogitBlock columns at a time (the fp32
//                       product of a block is rounded into Z while it is still in cache);
//   per row           : widened into a per-thread fp32 row (L2-resident), the float row pass
//                       (lm_head_rows.h: max, exp, double sums, scale · (softmax − onehot)),
//                       rounded back into Z as the bf16 dlogits;
//   dX (m × C)        = Σ_b dZ_b W_b and dW_b += dZ_bᵀ X over blocks b of kGradientBlock
//                       vocabulary rows (dZ_b read by both products while it is in cache).
// Why the gradient blocks: oneDNN 2.6's AMX kernel runs the whole-vocabulary dX (K = 151936)
// at 500 GFLOP/s on this 2-core Sapphire Rapids, blocks of 16384 at ≈ 1.3 TFLOP/s. Measured
// with bench_lm_head (BM_FusedBf16, T = 1024, V = 151936, 2 threads, idle): C = 1024 1.50 s
// per call with four 256-row chunks and fp32 logits, 1.34 s in one chunk with bf16 logits and
// whole products, 0.87 s with the blocks (4096 → 16384 rows: within 2%; 2048: 7% slower);
// C = 512 0.90 → 0.50 s. The logits block (4096) measured within noise of 2048 and 1024 and
// 12% faster than 8192 or 16384.
//
// On an AMX CPU the logits and dX products run on our own tiles (lm_head_amx.h: W packed into
// tiles a panel at a time, X's rows once per chunk) with dZ blocks of kLogitBlock rows (the
// tiles of a block of dZ, Rp × 4096 bf16, are the one extra buffer); dW, where the head trains,
// stays oneDNN's. The logits are one pass over the whole vocabulary that rounds each strip of
// fp32 products into Z while it is in cache (no fp32 logits block, 16 MiB at Rp 1024, through
// memory). The row pass without a soft-cap is row_stats_bf16 (lm_head_rows.h: the widening,
// the statistics and the rounding of the dlogits in three passes over the row instead of six).
// bench_lm_head BM_FrozenBf16 (C = 2048, T = 1024, the QLoRA head): see docs/benchmarks.md.
//
// On the widened bf16 path (bf16_matmul_path.h: a CPU without AMX), the operands of each product
// are widened here, once per use, into fp32 scratch and multiplied by the fp32 GEMM, instead of
// matmul_bf16 widening both operands per call: the chunk's X once per chunk (not once per
// logits block and again per dW block), a dZ block once for both gradient products (not once
// each). The products are the same fp32 GEMMs on the same exactly widened values.
//
// A vocabulary shard keeps the float path's chunking (its row statistics combine per-row numbers
// over the group between passes, over a whole chunk of fp32 rows), with the logits rounded to
// bf16 in place so that a sharded head computes what the whole one does.
//
// The final-logit soft-cap (Gemma 2's final_logit_softcapping) runs as transformers runs it on
// autocast's bf16 logits: three bf16 tensor ops, logits / cap, tanh, · cap, each rounded to bf16,
// and in the backward the three bf16 gradients of those ops (· cap, · (1 − tanh²), / cap), each
// rounded. The rounded tanh is the one value the backward needs besides the dlogits; it is kept
// in the bf16 logits buffer itself (its logit was already widened into an fp32 row), so the cap
// costs no memory.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "core/half.h"
#include "core/thread_pool.h"
#include "ops/cpu/amx.h"
#include "ops/cpu/bf16_matmul_path.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/lm_head_amx.h"
#include "ops/cpu/lm_head_rows.h"
#include "ops/lm_head_ce.h"
#include "ops/ops.h"

namespace sft::ops {

namespace {

using namespace lm_head_detail;

// A chunk's rows are padded with zero rows to a multiple of kRowQuantum: the scored-row count
// changes every step, and oneDNN compiles a kernel per new shape (tens of ms each).
constexpr int64_t kRowQuantum = 64;
constexpr int64_t kLogitBudget = int64_t{512} << 20;  // bytes of bf16 logits held at once
constexpr int64_t kLogitBlock = 4096;                 // vocabulary columns per logits product
constexpr int64_t kGradientBlock = 16384;  // vocabulary rows per pair of gradient products

int64_t round_up(int64_t n, int64_t q) {
  return (n + q - 1) / q * q;
}

// Rows i of a (rows × V) block of fp32 products into columns [v0, v0 + nb) of Z (bf16, ld V).
void round_block(uint16_t* z, int64_t V, const float* block, int64_t rows, int64_t v0, int64_t nb) {
  parallel_for_rows(rows, 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) cpu::round_row_to_bf16(z + i * V + v0, block + i * nb, nb);
  });
}

// dst (rows × cols, dense) = src (rows × cols, ld elements per row) widened from bf16.
void widen_rows(float* dst, const uint16_t* src, int64_t ld, int64_t rows, int64_t cols) {
  parallel_for_rows(rows, 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) cpu::widen_row_from_bf16(dst + i * cols, src + i * ld, cols);
  });
}

// The whole-vocabulary plan: R rows per chunk, padded to Rp; logits blocks of VB columns,
// gradient blocks of GB rows; widened: the products run as fp32 GEMMs on operands widened here;
// tiles: the logits and dX products on our AMX tiles (lm_head_amx.h).
struct WholePlan {
  int64_t R, Rp, VB, GB;
  bool widened, tiles;
};
WholePlan whole_plan(const LmHeadTuning& t, int64_t n, int64_t V) {
  WholePlan p;
  p.R = t.rows_per_chunk > 0
            ? std::min(t.rows_per_chunk, n)
            : std::min(n, std::max<int64_t>(kRowQuantum,
                                            kLogitBudget / (V * 2) / kRowQuantum * kRowQuantum));
  p.Rp = round_up(p.R, kRowQuantum);
  p.VB = std::min(t.vocab_block > 0 ? t.vocab_block : kLogitBlock, V);
  p.widened = cpu::bf16_matmul_choice().path == cpu::Bf16MatmulPath::kWidened;
  p.tiles = !p.widened && cpu::use_amx();
  // Widened, the gradient blocks are the logits blocks' 4096 rows: within noise of 16384 on
  // bench_lm_head (BM_FusedBf16/C:1024/m:0/vb:*, one thread), for a quarter of the fp32 copies
  // of W's and dZ's block (2 × 16 MiB instead of 2 × 64 MiB at C = 1024). On the tiles too: a
  // quarter of the tiles of dZ's block.
  const int64_t gradient_block = p.widened || p.tiles ? kLogitBlock : kGradientBlock;
  p.GB = std::min(t.vocab_block > 0 ? t.vocab_block : gradient_block, V);
  return p;
}

struct WholeScratch {
  uint16_t *xs, *z;    // (Rp × C) the chunk's rows of x; (Rp × V) logits, then dlogits
  float *block, *dxs;  // (Rp × VB) one logits block's fp32 product (not on the tiles); (Rp × C)
                       // the chunk's dX
  float* rows32;       // (workers × V) each row-pass worker's fp32 row
  // Widened plans only (else null): xs, a block of W (max(VB, GB) × C), a block of dZ (Rp × GB)
  // in fp32.
  float *xs32, *w32, *dz32;
};

WholeScratch take_whole(Workspace& mem, RowScratch& rs, int64_t n, const WholePlan& p, int64_t C,
                        int64_t V) {
  take_rows(mem, rs, n);
  take_row_stats(mem, rs, p.R);
  WholeScratch w;
  w.xs = mem.take<uint16_t>(p.Rp * C, kOp);
  w.z = mem.take<uint16_t>(p.Rp * V, kOp);
  w.block = p.tiles ? nullptr : mem.take<float>(p.Rp * p.VB, kOp);  // tiles: rounded per strip
  w.dxs = mem.take<float>(p.Rp * C, kOp);
  w.rows32 = mem.take<float>(workspace_workers() * V, kOp);
  w.xs32 = w.w32 = w.dz32 = nullptr;
  if (p.widened) {
    w.xs32 = mem.take<float>(p.Rp * C, kOp);
    w.w32 = mem.take<float>(std::max(p.VB, p.GB) * C, kOp);
    w.dz32 = mem.take<float>(p.Rp * p.GB, kOp);
  }
  return w;
}

// The shard plan keeps the float path's chunking (fp32 logits + bf16 dlogits: 6 bytes a logit).
struct ShardScratch {
  float *z, *dxs;     // (Rp × V) fp32 logits, then dlogits; (Rp × C) the chunk's dX
  uint16_t *xs, *dz;  // (Rp × C) the chunk's rows of x; (Rp × V) bf16 dlogits
};

ShardScratch take_shard(Workspace& mem, RowScratch& rs, int64_t n, int64_t R, int64_t C,
                        int64_t V) {
  const int64_t Rp = round_up(R, kRowQuantum);
  take_rows(mem, rs, n);
  take_shard_stats<float>(mem, rs, R);
  ShardScratch s;
  s.z = mem.take<float>(Rp * V, kOp);
  s.dxs = mem.take<float>(Rp * C, kOp);
  s.xs = mem.take<uint16_t>(Rp * C, kOp);
  s.dz = mem.take<uint16_t>(Rp * V, kOp);
  return s;
}

// The soft-cap's forward on one row: z holds bf16 logits widened to fp32 and becomes the capped
// logits r(r(tanh(r(z / cap))) · cap) (r: round to bf16); t receives the rounded tanh.
void soft_cap_row(float* z, uint16_t* t, int64_t V, float cap) {
  for (int64_t j = 0; j < V; ++j) {
    const bf16_bits th = f32_to_bf16(std::tanh(bf16_to_f32(f32_to_bf16(z[j] / cap))));
    t[j] = th;
    z[j] = bf16_to_f32(f32_to_bf16(bf16_to_f32(th) * cap));
  }
}

// Its backward on one row: dl holds the fp32 dlogits of the capped logits and t_dz the rounded
// tanh, which is replaced by the bf16 gradient of the uncapped logits: the fp32 → bf16 cast of
// the loss's upcast, then the gradients of · cap, tanh and / cap, each rounded.
void soft_cap_backward_row(uint16_t* t_dz, const float* dl, int64_t V, float cap) {
  for (int64_t j = 0; j < V; ++j) {
    const float th = bf16_to_f32(t_dz[j]);
    float g = bf16_to_f32(f32_to_bf16(dl[j]));
    g = bf16_to_f32(f32_to_bf16(g * cap));
    g = bf16_to_f32(f32_to_bf16(g * (1.0f - th * th)));
    t_dz[j] = f32_to_bf16(g / cap);
  }
}

// The m chunk rows' statistics; with grad, each row of Z becomes its bf16 dlogits. Each worker
// widens its rows into its own fp32 row of rows32 (the workers are the slots of the split).
void row_pass(LmHeadStats& total, const RowScratch& rs, float* rows32, uint16_t* z,
              const int64_t* targets, int64_t c0, int64_t m, int64_t V, bool grad, float scale,
              float softcap) {
  const int64_t slots = std::min<int64_t>(workspace_workers(), m);
  parallel_for_rows(slots, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t slot = s0; slot < s1; ++slot) {
      float* row = rows32 + slot * V;
      const auto [b, e] = ThreadPool::chunk_range(
          static_cast<size_t>(m), static_cast<size_t>(slots), static_cast<size_t>(slot));
      for (int64_t i = static_cast<int64_t>(b); i < static_cast<int64_t>(e); ++i) {
        uint16_t* zi = z + i * V;
        const int64_t target = targets[rs.rows[c0 + i]];
        RowStats r;
        if (softcap > 0) {
          cpu::widen_row_from_bf16(row, zi, V);
          soft_cap_row(row, zi, V, softcap);  // zi now holds the tanh
          r = row_stats_f32(row, V, target, grad, scale);
          if (grad) soft_cap_backward_row(zi, row, V, softcap);
        } else {
          r = row_stats_bf16(zi, row, V, target, grad, scale);
        }
        rs.loss[i] = r.loss;
        rs.entropy[i] = r.entropy;
        rs.correct[i] = r.correct ? 1 : 0;
      }
    }
  });
  for (int64_t i = 0; i < m; ++i) {  // in row order: deterministic
    total.loss_sum += rs.loss[i];
    total.entropy_sum += rs.entropy[i];
    total.correct += rs.correct[i];
    total.count += 1;
  }
}

// Gathers the chunk's rows of x into xs (mp × C), zero-padded.
void gather_rows(uint16_t* xs, const uint16_t* x, const RowScratch& rs, int64_t c0, int64_t m,
                 int64_t mp, int64_t C) {
  for (int64_t i = 0; i < m; ++i)
    std::memcpy(xs + i * C, x + rs.rows[c0 + i] * C, static_cast<size_t>(C) * sizeof(uint16_t));
  std::memset(xs + m * C, 0, static_cast<size_t>((mp - m) * C) * sizeof(uint16_t));
}

void scatter_rows(float* dx, const float* dxs, const RowScratch& rs, int64_t c0, int64_t m,
                  int64_t C) {
  for (int64_t i = 0; i < m; ++i)
    std::memcpy(dx + rs.rows[c0 + i] * C, dxs + i * C, static_cast<size_t>(C) * sizeof(float));
}

// A row of fp32 logits rounded to bf16 and widened back in place, through a stack tile (the
// rounding is elementwise, so tiles give the same values as one whole-row pass).
void round_trip_row(float* z, int64_t V) {
  constexpr int64_t kTile = 2048;
  uint16_t tile[kTile];
  for (int64_t j = 0; j < V; j += kTile) {
    const int64_t len = std::min(kTile, V - j);
    cpu::round_row_to_bf16(tile, z + j, len);
    cpu::widen_row_from_bf16(z + j, tile, len);
  }
}

LmHeadStats whole_vocabulary(float* dx, float* dw, const uint16_t* x, const uint16_t* w,
                             const int64_t* targets, float scale, int64_t Tn, int64_t C, int64_t V,
                             LmHeadWorkspace& ws, int64_t n, float softcap) {
  LmHeadStats total;
  const bool grad = dx || dw;
  const WholePlan p = whole_plan(ws.tuning, n, V);
  const int64_t R = p.R, VB = p.VB, GB = p.GB;
  Workspace mem = ws.memory;
  RowScratch rs;
  const WholeScratch sc =
      take_layout(mem, kOp, [&](Workspace& m) { return take_whole(m, rs, n, p, C, V); });
  fill_rows(rs, targets, Tn, false);
  uint16_t* xs = sc.xs;
  uint16_t* z = sc.z;
  float* block = sc.block;
  float* dxs = sc.dxs;
  for (int64_t c0 = 0; c0 < n; c0 += R) {
    const int64_t m = std::min(R, n - c0), mp = round_up(m, kRowQuantum);
    gather_rows(xs, x, rs, c0, m, mp, C);
    if (p.widened) widen_rows(sc.xs32, xs, C, mp, C);
    if (p.tiles) {
      cpu::lm_head_logits_bf16_amx(z, V, cpu::pack_lm_head_rows(xs, mp, C), m, w, V, C);
    } else {
      for (int64_t v0 = 0; v0 < V; v0 += VB) {
        const int64_t nb = std::min(VB, V - v0);
        if (p.widened) {
          widen_rows(sc.w32, w + v0 * C, C, nb, C);
          matmul(block, sc.xs32, sc.w32, mp, nb, C, false, true, false, C, C, nb);
        } else {
          matmul_bf16(block, xs, w + v0 * C, mp, nb, C, false, true, false, C, C, nb);
        }
        round_block(z, V, block, m, v0, nb);
      }
    }
    row_pass(total, rs, sc.rows32, z, targets, c0, m, V, grad, scale, softcap);
    if (!grad) continue;
    std::memset(z + m * V, 0, static_cast<size_t>((mp - m) * V) * sizeof(uint16_t));
    for (int64_t v0 = 0; v0 < V; v0 += GB) {  // in block order: dX's sum is deterministic
      const int64_t nb = std::min(GB, V - v0);
      if (p.widened) {
        widen_rows(sc.dz32, z + v0, V, mp, nb);
        if (dx) {
          widen_rows(sc.w32, w + v0 * C, C, nb, C);
          matmul(dxs, sc.dz32, sc.w32, mp, C, nb, false, false, v0 > 0, nb, C, C);
        }
        if (dw) matmul(dw + v0 * C, sc.dz32, sc.xs32, nb, C, mp, true, false, true, nb, C, C);
        continue;
      }
      if (dx && p.tiles)
        cpu::lm_head_dx_amx(dxs, z + v0, V, mp, nb, w + v0 * C, C, v0 > 0);
      else if (dx)
        matmul_bf16(dxs, z + v0, w + v0 * C, mp, C, nb, false, false, v0 > 0, V, C, C);
      if (dw) matmul_bf16(dw + v0 * C, z + v0, xs, nb, C, mp, true, false, true, V, C, C);
    }
    if (dx) scatter_rows(dx, dxs, rs, c0, m, C);
  }
  return total;
}

LmHeadStats vocabulary_shard(float* dx, float* dw, const uint16_t* x, const uint16_t* w,
                             const int64_t* targets, float scale, int64_t Tn, int64_t C, int64_t V,
                             LmHeadWorkspace& ws, int64_t n, int64_t vocab_begin, ShardGroup& group,
                             int64_t real, float softcap) {
  LmHeadStats total;
  const bool grad = dx || dw;
  const int64_t R = chunk_rows(ws.tuning, n, V, 6);  // fp32 logits + bf16 dlogits
  const int64_t VB = vocab_block(ws.tuning, V);
  Workspace mem = ws.memory;
  RowScratch rs;
  const ShardScratch sc =
      take_layout(mem, kOp, [&](Workspace& m) { return take_shard(m, rs, n, R, C, V); });
  fill_rows(rs, targets, Tn, false);
  float* z = sc.z;
  float* dxs = sc.dxs;
  uint16_t* xs = sc.xs;
  uint16_t* dz = sc.dz;
  for (int64_t c0 = 0; c0 < n; c0 += R) {
    const int64_t m = std::min(R, n - c0), mp = round_up(m, kRowQuantum);
    gather_rows(xs, x, rs, c0, m, mp, C);
    matmul_bf16(z, xs, w, mp, V, C, false, true, false);
    parallel_for_rows(m, 1, [&](int64_t b, int64_t e) {  // autocast's bf16 logits, capped
      for (int64_t i = b; i < e; ++i) {
        round_trip_row(z + i * V, V);
        if (softcap > 0) soft_cap_row(z + i * V, dz + i * V, V, softcap);  // dz: the tanh
      }
    });
    chunk_stats_shard(total, rs, z, targets, c0, m, V, real, grad, scale, vocab_begin, group);
    if (!grad) continue;
    parallel_for_rows(m, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (softcap > 0)
          soft_cap_backward_row(dz + i * V, z + i * V, V, softcap);
        else
          cpu::round_row_to_bf16(dz + i * V, z + i * V, V);
      }
    });
    std::memset(dz + m * V, 0, static_cast<size_t>((mp - m) * V) * sizeof(uint16_t));
    for (int64_t v0 = 0; v0 < V; v0 += VB) {
      const int64_t nb = std::min(VB, V - v0);
      if (dx) matmul_bf16(dxs, dz + v0, w + v0 * C, mp, C, nb, false, false, v0 > 0, V, C, C);
      if (dw) matmul_bf16(dw + v0 * C, dz + v0, xs, nb, C, mp, true, false, true, V, C, C);
    }
    if (dx) scatter_rows(dx, dxs, rs, c0, m, C);
  }
  return total;
}

}  // namespace

template <>
size_t lm_head_kernel_workspace_bytes<uint16_t>(int64_t Tn, int64_t C, int64_t V, bool shard,
                                                const LmHeadTuning& tuning) {
  Workspace mem = Workspace::measuring();
  RowScratch rs;
  if (Tn <= 0 || V <= 0) return 0;
  if (shard)
    take_shard(mem, rs, Tn, chunk_rows(tuning, Tn, V, 6), C, V);
  else
    take_whole(mem, rs, Tn, whole_plan(tuning, Tn, V), C, V);
  return mem.used();
}

LmHeadStats lm_head_cross_entropy_bf16(float* dx, float* dw, const uint16_t* x, const uint16_t* w,
                                       const int64_t* targets, float scale, int64_t Tn, int64_t C,
                                       int64_t V, LmHeadWorkspace& ws, int64_t vocab_begin,
                                       ShardGroup* group, int64_t vocab, float softcap) {
  if (dx) std::memset(dx, 0, static_cast<size_t>(Tn * C) * sizeof(float));
  const int64_t n = count_rows(targets, Tn, shard_vocab(vocab, V, group), false);
  LmHeadStats total;
  if (n > 0 && V > 0)
    total = group ? vocabulary_shard(dx, dw, x, w, targets, scale, Tn, C, V, ws, n, vocab_begin,
                                     *group, shard_real_rows(vocab, V, vocab_begin, group), softcap)
                  : whole_vocabulary(dx, dw, x, w, targets, scale, Tn, C, V, ws, n, softcap);
  // A shard's dx is its slice's dZ W_local: the whole head's is the sum over the group. Every
  // rank sums, also one without scored rows (the collective calls must match).
  if (group && dx) group->sum(std::span<float>(dx, static_cast<size_t>(Tn * C)));
  return total;
}

}  // namespace sft::ops
