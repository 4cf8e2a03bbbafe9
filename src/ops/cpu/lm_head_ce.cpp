// Fused LM head + cross-entropy, float and double, whole or a vocabulary shard. See
// ops/lm_head_ce.h for the contract and ops/cpu/lm_head_rows.h for the per-row arithmetic.
#include "ops/lm_head_ce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "ops/cpu/lm_head_rows.h"
#include "ops/ops.h"

namespace sft::ops {

namespace lm_head_detail {

// Chunk height and vocabulary block, chosen by measurement (bench/lm_head_bench.cpp, BM_Fused,
// fp32, T = 1024, V = 151936, 2 threads on the idle 2-core Sapphire Rapids VM, oneDNN's AVX-512
// brgemm; seconds per call):
//
//   m (rows), vocabulary block      256, whole   512, whole   512, 8192   512, 16384   1024, 16384
//   C = 512                         1.71         1.67         1.57        1.54         1.70
//   C = 1024                        3.14         -            2.92        2.89         2.84
//
// Taller chunks stream the 151936 × C weight and its gradient (311 / 622 MB at C = 512) fewer
// times (T/m); the vocabulary blocks let both gradient products read their dZ block while it
// is still in cache. Past 512 rows the gain is within noise at C = 1024 and a loss at C = 512,
// for twice the memory, so m = 512 (Z = 311 MB in fp32), less when the vocabulary is so large
// that Z would pass 512 MiB.
int64_t default_rows_per_chunk(int64_t V, int64_t element_bytes) {
  const int64_t budget = int64_t{512} << 20;
  return std::clamp<int64_t>(budget / std::max<int64_t>(V * element_bytes, 1), 1, 512);
}

int64_t default_vocab_block(int64_t /*V*/) {
  return 16384;
}

}  // namespace lm_head_detail

namespace {

using namespace lm_head_detail;

// The call's scratch after the rows (RowScratch): the Z chunk (R × V), the X and dX chunks
// (R × C). The size function lays out the same pieces for n = Tn.
template <typename T>
struct Chunk {
  T *z, *xs, *dxs;
};

template <typename T>
Chunk<T> take_chunk(Workspace& mem, RowScratch& rs, int64_t n, int64_t R, int64_t C, int64_t V,
                    bool shard) {
  take_rows(mem, rs, n);
  take_row_stats(mem, rs, R);
  if (shard) take_shard_stats<T>(mem, rs, R);
  Chunk<T> c;
  c.z = mem.take<T>(R * V, kOp);
  c.xs = mem.take<T>(R * C, kOp);
  c.dxs = mem.take<T>(R * C, kOp);
  return c;
}

// z = cap · tanh(z / cap) over n logits, the tanh kept in t when given.
template <typename T>
void soft_cap(T* z, T* t, int64_t n, T cap) {
  parallel_for_rows(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T th = std::tanh(z[i] / cap);
      z[i] = cap * th;
      if (t) t[i] = th;
    }
  });
}

// The gradient through the cap: dz · (1 − tanh²).
template <typename T>
void soft_cap_backward(T* dz, const T* t, int64_t n) {
  parallel_for_rows(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dz[i] *= T(1) - t[i] * t[i];
  });
}

}  // namespace

template <typename T>
size_t lm_head_kernel_workspace_bytes(int64_t Tn, int64_t C, int64_t V, bool shard,
                                      const LmHeadTuning& tuning) {
  Workspace mem = Workspace::measuring();
  RowScratch rs;
  take_chunk<T>(mem, rs, Tn, chunk_rows(tuning, Tn, V, static_cast<int64_t>(sizeof(T))), C, V,
                shard);
  return mem.used();
}

template <typename T>
LmHeadStats lm_head_cross_entropy(T* dx, T* dw, T* logits, const T* x, const T* w,
                                  const int64_t* targets, T scale, int64_t Tn, int64_t C, int64_t V,
                                  LmHeadWorkspace& ws, int64_t vocab_begin, ShardGroup* group,
                                  int64_t vocab, T softcap, LmHeadWeightBlocks* blocks) {
  LmHeadStats total;
  if (group && logits)
    fail("lm_head", "no logits from a vocabulary shard (hint: gather them from whole weights)");
  if (blocks && (!std::is_same_v<T, float> || group || logits || w))
    fail("lm_head",
         "weight blocks are for an fp32 head without a vocabulary shard, full logits or a whole w");
  if (dx) std::memset(dx, 0, static_cast<size_t>(Tn * C) * sizeof(T));
  const bool grad = dx || dw;
  const int64_t n = count_rows(targets, Tn, shard_vocab(vocab, V, group), logits != nullptr);
  const int64_t real = shard_real_rows(vocab, V, vocab_begin, group);
  if (!blocks && (n == 0 || V <= 0)) return total;
  const int64_t R = chunk_rows(ws.tuning, n, V, static_cast<int64_t>(sizeof(T)));
  const int64_t VB = vocab_block(ws.tuning, V);
  Workspace mem = ws.memory;
  RowScratch rs;
  const Chunk<T> ch = take_layout(
      mem, kOp, [&](Workspace& m) { return take_chunk<T>(m, rs, n, R, C, V, group != nullptr); });
  fill_rows(rs, targets, Tn, logits != nullptr);
  T* z = ch.z;
  T* xs = ch.xs;
  T* dxs = ch.dxs;
  // With the soft-cap's gradient the chunk's tanh is kept: in Z's second half (chunks of
  // R / 2 rows), or for one-row chunks in a row of its own.
  const bool keep_tanh = softcap > 0 && grad;
  const int64_t step = keep_tanh && R > 1 ? R / 2 : R;
  std::vector<T> one_row;
  if (keep_tanh && R == 1) one_row.resize(static_cast<size_t>(V));
  T* tz = !keep_tanh ? nullptr : R > 1 ? z + step * V : one_row.data();
  // Rows [v0, v0 + nb) of w: in place, or from the caller's blocks (then for every rank's same
  // sequence of blocks, even in a chunk without rows: lm_head_blocks.h).
  auto w_rows = [&](int64_t v0, int64_t nb) -> const T* {
    if constexpr (std::is_same_v<T, float>)
      if (blocks) return blocks->rows(v0, v0 + nb);
    return w + v0 * C;
  };
  auto dw_rows = [&](int64_t v0, int64_t nb) -> T* {
    if constexpr (std::is_same_v<T, float>)
      if (blocks)
        if (float* g = blocks->grad_rows(v0, v0 + nb)) return g;
    return dw + v0 * C;
  };
  const int64_t own_chunks = (n + step - 1) / step;
  const int64_t chunks = blocks ? blocks->chunks(own_chunks) : own_chunks;
  for (int64_t ci = 0; ci < chunks; ++ci) {
    const int64_t c0 = ci * step;
    const int64_t m = std::clamp<int64_t>(n - c0, 0, step);
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(xs + i * C, x + rs.rows[c0 + i] * C, static_cast<size_t>(C) * sizeof(T));
    // Z_c = X_c Wᵀ over the same vocabulary blocks as the gradient products below.
    for (int64_t v0 = 0; v0 < V; v0 += VB) {
      const int64_t nb = std::min(VB, V - v0);
      const T* wb = w_rows(v0, nb);
      if (m > 0) matmul(z + v0, xs, wb, m, nb, C, false, true, false, C, C, V);
    }
    if (m == 0) {  // an empty chunk: the blocks asked for, nothing computed
      for (int64_t v0 = 0; grad && v0 < V; v0 += VB) {
        const int64_t nb = std::min(VB, V - v0);
        w_rows(v0, nb);
        if (blocks && ci + 1 == chunks) blocks->grad_done(v0, v0 + nb);
      }
      continue;
    }
    if (softcap > 0) soft_cap(z, tz, m * V, softcap);
    if (logits)
      for (int64_t i = 0; i < m; ++i)
        std::memcpy(logits + rs.rows[c0 + i] * V, z + i * V, static_cast<size_t>(V) * sizeof(T));
    if (group)
      chunk_stats_shard(total, rs, z, targets, c0, m, V, real, grad, scale, vocab_begin, *group);
    else
      chunk_stats(total, rs, z, targets, c0, m, V, grad, scale);
    if (!grad) continue;
    if (keep_tanh) soft_cap_backward(z, tz, m * V);
    // dX_c = dZ W, dW += dZᵀ X_c, over vocabulary blocks of VB columns of dZ (in block order,
    // so dX_c's sum over blocks is deterministic).
    for (int64_t v0 = 0; v0 < V; v0 += VB) {
      const int64_t nb = std::min(VB, V - v0);
      const T* wb = w_rows(v0, nb);
      if (dx) matmul(dxs, z + v0, wb, m, C, nb, false, false, v0 > 0, V, C, C);
      if (dw) matmul(dw_rows(v0, nb), z + v0, xs, nb, C, m, true, false, true, V, C, C);
      if (blocks && ci + 1 == chunks) blocks->grad_done(v0, v0 + nb);
    }
    if (dx)
      for (int64_t i = 0; i < m; ++i)
        std::memcpy(dx + rs.rows[c0 + i] * C, dxs + i * C, static_cast<size_t>(C) * sizeof(T));
  }
  // A shard's dx is its slice's dZ W_local: the whole head's is the sum over the group.
  if (group && dx) group->sum(std::span<T>(dx, static_cast<size_t>(Tn * C)));
  return total;
}

template size_t lm_head_kernel_workspace_bytes<float>(int64_t, int64_t, int64_t, bool,
                                                      const LmHeadTuning&);
template size_t lm_head_kernel_workspace_bytes<double>(int64_t, int64_t, int64_t, bool,
                                                       const LmHeadTuning&);
template LmHeadStats lm_head_cross_entropy<float>(float*, float*, float*, const float*,
                                                  const float*, const int64_t*, float, int64_t,
                                                  int64_t, int64_t, LmHeadWorkspace&, int64_t,
                                                  ShardGroup*, int64_t, float, LmHeadWeightBlocks*);
template LmHeadStats lm_head_cross_entropy<double>(double*, double*, double*, const double*,
                                                   const double*, const int64_t*, double, int64_t,
                                                   int64_t, int64_t, LmHeadWorkspace&, int64_t,
                                                   ShardGroup*, int64_t, double,
                                                   LmHeadWeightBlocks*);

}  // namespace sft::ops
