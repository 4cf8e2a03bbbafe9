// Internal to the fused LM head kernels (lm_head_ce.cpp, lm_head_ce_bf16.cpp): the per-row
// softmax statistics, the chunk plan and the fixed-order reduction, shared by every dtype.
//
// The row arithmetic is model::lm_head_loss's (validated against transformers): max, exp in the
// compute dtype, sums in double; with a gradient the row becomes scale·(softmax − onehot) in
// place, so each logit is exponentiated once.
//
// A vocabulary shard (chunk_stats_shard) does the same arithmetic in three passes over its
// slice of each row, with the group combining per-row numbers in between: the slice's max →
// the group's max; with that max, the slice's exp sums and its share of the target and argmax
// facts → one sum of doubles over the group; then the dlogits. The exponentials and the
// dlogits are the same expressions as the whole row's; only the sums' order differs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>

#include "core/error.h"
#include "core/shard_group.h"
#include "ops/lm_head_ce.h"
#include "ops/ops.h"

namespace sft::ops::lm_head_detail {

struct RowStats {
  double loss = 0, entropy = 0;
  bool correct = false;
};

// The row's statistics from its max, target logit and sums (relative to the max); with a
// gradient, turns the row of exponentials into scale · (softmax − onehot) in place.
template <typename T>
RowStats finish_row(T* z, int64_t V, int64_t target, bool grad, T scale, T mx, T zt, int64_t arg,
                    double sum, double sum_pz) {
  const double lse = std::log(sum);  // relative to mx
  RowStats r;
  r.loss = lse - static_cast<double>(zt - mx);
  r.entropy = lse - sum_pz / sum;
  r.correct = arg == target;
  if (grad) {
    const T k = static_cast<T>(1.0 / sum) * scale;
    for (int64_t j = 0; j < V; ++j) z[j] *= k;
    z[target] -= scale;
  }
  return r;
}

// The one scalar exp pass of a row (the whole row's and a shard slice's, every dtype, and the
// fp32 reference ops/cpu/lm_head_reference.cpp): Σ exp(z − mx) and Σ exp(z − mx)·(z − mx) in
// double, exp in the compute dtype; with store, z becomes exp(z − mx).
template <typename T>
void scalar_exp_sums(T* z, int64_t V, T mx, bool store, double* sum, double* sum_pz) {
  double s = 0, spz = 0;
  for (int64_t j = 0; j < V; ++j) {
    const T d = z[j] - mx;
    const T e = std::exp(d);
    s += static_cast<double>(e);
    spz += static_cast<double>(e * d);
    if (store) z[j] = e;
  }
  *sum = s;
  *sum_pz = spz;
}

// A whole row with scalar loops: first max, target logit, the exp pass, finish_row.
template <typename T>
RowStats scalar_row_stats(T* z, int64_t V, int64_t target, bool grad, T scale) {
  T mx = z[0];
  int64_t arg = 0;
  for (int64_t j = 1; j < V; ++j)
    if (z[j] > mx) mx = z[j], arg = j;  // strict: the first max wins ties
  const T zt = z[target];
  double sum = 0, sum_pz = 0;
  scalar_exp_sums(z, V, mx, grad, &sum, &sum_pz);
  return finish_row(z, V, target, grad, scale, mx, zt, arg, sum, sum_pz);
}

// The fused kernels' row: scalar for double, vectorised for float (below).
template <typename T>
RowStats row_stats(T* z, int64_t V, int64_t target, bool grad, T scale) {
  return scalar_row_stats(z, V, target, grad, scale);
}

// The float row, vectorised: max over 16 lanes (the first maximal index found after), exp by
// cpu::exp_score (≈ 2 ulp, branch-free), the two sums over 8 double lanes combined in a fixed
// order. Deterministic; differs from the scalar form by exp's last bits and the sum order.
RowStats row_stats_f32(float* z, int64_t V, int64_t target, bool grad, float scale);
template <>
inline RowStats row_stats<float>(float* z, int64_t V, int64_t target, bool grad, float scale) {
  return row_stats_f32(z, V, target, grad, scale);
}

// row_stats_f32 of a row of bf16 logits z (the bf16 head's, without a soft-cap), widened into
// the fp32 scratch row (V floats); with grad, z becomes the bf16 dlogits (the float row's,
// rounded by f32_to_bf16). The same values as widening, row_stats_f32 and rounding in turn, in
// three passes over the row instead of six.
RowStats row_stats_bf16(uint16_t* z, float* row, int64_t V, int64_t target, bool grad, float scale);

// The pieces of a float row on a vocabulary shard, vectorised as row_stats_f32: the slice's
// largest element (NaNs passed over, −inf if none); Σ exp(z − mx) and Σ exp(z − mx)·(z − mx),
// z becoming exp(z − mx) with store; z *= k.
float row_max_f32(const float* z, int64_t V);
void row_exp_sums_f32(float* z, int64_t V, float mx, bool store, double* sum, double* sum_pz);
void row_scale_f32(float* z, int64_t V, float k);

// The call's scratch, carved from the caller's workspace (ops/workspace.h) at the start of each
// call: the rows computed, and per chunk row its statistics (whole rows) or the numbers the
// group combines (shards).
struct RowScratch {
  int64_t* rows = nullptr;     // (n) the rows computed, in order
  double* loss = nullptr;      // (R) per chunk row, reduced in row order
  double* entropy = nullptr;   // (R)
  uint8_t* correct = nullptr;  // (R)
  void* shard_max = nullptr;   // (R) of T: the group's row maxima (this slice's before the max)
  double* shard_local_max = nullptr;  // (R) this slice's
  double* shard_sums = nullptr;       // (R · kShardSums) combined over the group
};

inline constexpr const char* kOp = "lm_head_cross_entropy";

inline void take_rows(Workspace& mem, RowScratch& s, int64_t n) {
  s.rows = mem.take<int64_t>(n, kOp);
}
inline void take_row_stats(Workspace& mem, RowScratch& s, int64_t R) {
  s.loss = mem.take<double>(R, kOp);
  s.entropy = mem.take<double>(R, kOp);
  s.correct = mem.take<uint8_t>(R, kOp);
}
enum ShardSum { kSum, kSumPz, kTargetGap, kTargetIsMax, kMaxBeforeTarget, kShardSums };
template <typename T>
void take_shard_stats(Workspace& mem, RowScratch& s, int64_t R) {
  s.shard_max = mem.take<T>(R, kOp);
  s.shard_local_max = mem.take<double>(R, kOp);
  s.shard_sums = mem.take<double>(R * kShardSums, kOp);
}

// The rows to compute: scored rows, or all when logits are wanted. count_rows checks the
// targets and counts them (the workspace is laid out for that count), fill_rows lists them.
// (V: the whole vocabulary, real rows only.)
inline int64_t count_rows(const int64_t* targets, int64_t Tn, int64_t V, bool all) {
  int64_t n = 0;
  for (int64_t t = 0; t < Tn; ++t) {
    const int64_t y = targets[t];
    if (y < -1 || y >= V)
      fail("lm_head", "target " + std::to_string(y) + " at row " + std::to_string(t) +
                          " is outside [0, " + std::to_string(V) +
                          ") (hint: use -1 for positions that are not scored)");
    if (all || y >= 0) ++n;
  }
  return n;
}
// A shard's rows of the whole vocabulary `vocab` (0: V · group size, nothing padded), and how
// many of its V rows from `begin` are real.
inline int64_t shard_vocab(int64_t vocab, int64_t V, const ShardGroup* group) {
  return !group ? V : vocab > 0 ? vocab : V * group->size();
}
inline int64_t shard_real_rows(int64_t vocab, int64_t V, int64_t begin, const ShardGroup* group) {
  return std::clamp<int64_t>(shard_vocab(vocab, V, group) - begin, 0, V);
}
inline void fill_rows(RowScratch& s, const int64_t* targets, int64_t Tn, bool all) {
  int64_t n = 0;
  for (int64_t t = 0; t < Tn; ++t)
    if (all || targets[t] >= 0) s.rows[n++] = t;
}

// Rows per chunk: tuning.rows_per_chunk, else the measured default (see lm_head_ce.cpp), never more
// than the rows to compute; element_bytes is what one logit holds
// (fp32 4, fp64 8, bf16 6: fp32 logits + bf16 dlogits).
int64_t default_rows_per_chunk(int64_t V, int64_t element_bytes);
int64_t default_vocab_block(int64_t V);

inline int64_t chunk_rows(const LmHeadTuning& tuning, int64_t n, int64_t V, int64_t element_bytes) {
  const int64_t m =
      tuning.rows_per_chunk > 0 ? tuning.rows_per_chunk : default_rows_per_chunk(V, element_bytes);
  return std::max<int64_t>(1, std::min(m, n));
}

inline int64_t vocab_block(const LmHeadTuning& tuning, int64_t V) {
  const int64_t b = tuning.vocab_block > 0 ? tuning.vocab_block : default_vocab_block(V);
  return b <= 0 || b >= V ? V : b;
}

// Statistics (and dlogits in place when grad) of the m rows of a chunk starting at s.rows[c0];
// rows that are not scored get zero dlogits. Rows run in parallel; the sums are added in order.
template <typename T>
void chunk_stats(LmHeadStats& total, const RowScratch& ws, T* z, const int64_t* targets, int64_t c0,
                 int64_t m, int64_t V, bool grad, T scale) {
  parallel_for_rows(m, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t y = targets[ws.rows[c0 + i]];
      T* zi = z + i * V;
      if (y < 0) {
        if (grad) std::memset(zi, 0, static_cast<size_t>(V) * sizeof(T));
        continue;
      }
      const RowStats r = row_stats(zi, V, y, grad, scale);
      ws.loss[i] = r.loss;
      ws.entropy[i] = r.entropy;
      ws.correct[i] = r.correct ? 1 : 0;
    }
  });
  for (int64_t i = 0; i < m; ++i) {
    if (targets[ws.rows[c0 + i]] < 0) continue;
    total.loss_sum += ws.loss[i];
    total.entropy_sum += ws.entropy[i];
    total.correct += ws.correct[i];
    total.count += 1;
  }
}

// ---- vocabulary shards -----------------------------------------------------------------

// The same pieces for any T (double: the scalar loops of row_stats).
template <typename T>
T shard_row_max(const T* z, int64_t V) {
  T mx = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < V; ++j) mx = z[j] > mx ? z[j] : mx;
  return mx;
}
template <typename T>
void shard_exp_sums(T* z, int64_t V, T mx, bool store, double* sum, double* sum_pz) {
  scalar_exp_sums(z, V, mx, store, sum, sum_pz);
}
template <typename T>
void shard_scale(T* z, int64_t V, T k) {
  for (int64_t j = 0; j < V; ++j) z[j] *= k;
}
template <>
inline float shard_row_max<float>(const float* z, int64_t V) {
  return row_max_f32(z, V);
}
template <>
inline void shard_exp_sums<float>(float* z, int64_t V, float mx, bool store, double* sum,
                                  double* sum_pz) {
  row_exp_sums_f32(z, V, mx, store, sum, sum_pz);
}
template <>
inline void shard_scale<float>(float* z, int64_t V, float k) {
  row_scale_f32(z, V, k);
}

// What each rank adds up per row (doubles, one ShardGroup::sum per chunk): the slice's exp
// sums; z[target] − max on the rank owning the target (0 elsewhere, so the sum is exact);
// whether the target is a maximum (owner only); whether a maximum sits at a smaller id. The
// row is correct (argmax == target, the first maximum winning ties over the whole vocabulary)
// when the target is a maximum and no rank has one before it.
// (ShardSum, above, indexes them.)

// chunk_stats for a vocabulary shard: z (m × V) holds this rank's logits of the chunk's rows,
// the vocabulary ids [begin, begin + V), of which the first `real` are in the vocabulary and
// the rest padding (the padded split, model/tensor_parallel.h: outside the softmax, never the
// argmax, zero dlogits); targets are whole-vocabulary ids and every row is scored (a shard
// computes no logits, so s.rows holds scored rows only). Collectives: one max of the m row
// maxima, then one sum of m × kShardSums doubles, on every rank alike. total gets the whole
// head's statistics, the same on every rank; with grad, z becomes this slice of scale ·
// (softmax − onehot).
template <typename T>
void chunk_stats_shard(LmHeadStats& total, const RowScratch& ws, T* z, const int64_t* targets,
                       int64_t c0, int64_t m, int64_t V, int64_t real, bool grad, T scale,
                       int64_t begin, ShardGroup& group) {
  T* mx = static_cast<T*>(ws.shard_max);
  parallel_for_rows(m, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) mx[i] = shard_row_max(z + i * V, real);
  });
  for (int64_t i = 0; i < m; ++i) ws.shard_local_max[i] = static_cast<double>(mx[i]);
  group.max(std::span<T>(mx, static_cast<size_t>(m)));
  parallel_for_rows(m, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T* zi = z + i * V;
      const T M = mx[i];
      const int64_t y = targets[ws.rows[c0 + i]] - begin;  // the target in this slice
      const bool owner = y >= 0 && y < real;
      double* s = &ws.shard_sums[i * kShardSums];
      s[kTargetGap] = owner ? static_cast<double>(zi[y] - M) : 0.0;
      s[kTargetIsMax] = owner && zi[y] == M ? 1.0 : 0.0;
      // A maximum among this slice's ids below the target; only a slice whose own max is the
      // group's holds one, so the others skip the scan.
      const int64_t before =
          static_cast<T>(ws.shard_local_max[i]) == M ? std::clamp<int64_t>(y, 0, real) : 0;
      s[kMaxBeforeTarget] = std::find(zi, zi + before, M) != zi + before ? 1.0 : 0.0;
      shard_exp_sums(zi, real, M, grad, &s[kSum], &s[kSumPz]);
    }
  });
  group.sum(std::span<double>(ws.shard_sums, static_cast<size_t>(m * kShardSums)));
  if (grad)
    parallel_for_rows(m, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        T* zi = z + i * V;
        shard_scale(zi, real, static_cast<T>(1.0 / ws.shard_sums[i * kShardSums + kSum]) * scale);
        std::fill(zi + real, zi + V, T(0));  // padding: no gradient
        const int64_t y = targets[ws.rows[c0 + i]] - begin;
        if (y >= 0 && y < real) zi[y] -= scale;
      }
    });
  for (int64_t i = 0; i < m; ++i) {  // in row order, as chunk_stats
    const double* s = &ws.shard_sums[i * kShardSums];
    const double lse = std::log(s[kSum]);  // relative to the max
    total.loss_sum += lse - s[kTargetGap];
    total.entropy_sum += lse - s[kSumPz] / s[kSum];
    total.correct += s[kTargetIsMax] > 0.5 && s[kMaxBeforeTarget] < 0.5 ? 1 : 0;
    total.count += 1;
  }
}

}  // namespace sft::ops::lm_head_detail
