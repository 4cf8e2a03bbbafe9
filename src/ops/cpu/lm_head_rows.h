// Internal to the fused LM head kernels (lm_head_ce.cpp, lm_head_ce_bf16.cpp): the per-row
// softmax statistics, the chunk plan and the fixed-order reduction, shared by every dtype.
//
// The row arithmetic is model::lm_head_loss's (validated against transformers): max, exp in the
// compute dtype, sums in double; with a gradient the row becomes scale·(softmax − onehot) in
// place, so each logit is exponentiated once.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"
#include "ops/lm_head_ce.h"
#include "ops/ops.h"

namespace sft::ops::lm_head_detail {

struct RowStats {
  double loss = 0, entropy = 0;
  bool correct = false;
};

template <typename T>
RowStats row_stats(T* z, int64_t V, int64_t target, bool grad, T scale) {
  T mx = z[0];
  int64_t arg = 0;
  for (int64_t j = 1; j < V; ++j)
    if (z[j] > mx) mx = z[j], arg = j;  // strict: the first max wins ties
  const T zt = z[target];
  double sum = 0, sum_pz = 0;
  for (int64_t j = 0; j < V; ++j) {
    const T d = z[j] - mx;
    const T e = std::exp(d);
    sum += static_cast<double>(e);
    sum_pz += static_cast<double>(e * d);
    if (grad) z[j] = e;
  }
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

template <typename U>
void grow(std::vector<U>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

// The rows to compute (scored rows, or all when logits are wanted) into ws.rows; checks targets.
inline int64_t select_rows(LmHeadWorkspace& ws, const int64_t* targets, int64_t Tn, int64_t V,
                           bool all) {
  ws.rows.clear();
  for (int64_t t = 0; t < Tn; ++t) {
    const int64_t y = targets[t];
    if (y < -1 || y >= V)
      fail("lm_head", "target " + std::to_string(y) + " at row " + std::to_string(t) +
                          " is outside [0, " + std::to_string(V) +
                          ") (hint: use -1 for positions that are not scored)");
    if (all || y >= 0) ws.rows.push_back(t);
  }
  return static_cast<int64_t>(ws.rows.size());
}

// Rows per chunk: ws.rows_per_chunk, else the measured default (see lm_head_ce.cpp), never more
// than the rows to compute; element_bytes is what one logit holds
// (fp32 4, fp64 8, bf16 6: fp32 logits + bf16 dlogits).
int64_t default_rows_per_chunk(int64_t V, int64_t element_bytes);
int64_t default_vocab_block(int64_t V);

inline int64_t chunk_rows(const LmHeadWorkspace& ws, int64_t n, int64_t V, int64_t element_bytes) {
  const int64_t m =
      ws.rows_per_chunk > 0 ? ws.rows_per_chunk : default_rows_per_chunk(V, element_bytes);
  return std::max<int64_t>(1, std::min(m, n));
}

inline int64_t vocab_block(const LmHeadWorkspace& ws, int64_t V) {
  const int64_t b = ws.vocab_block > 0 ? ws.vocab_block : default_vocab_block(V);
  return b <= 0 || b >= V ? V : b;
}

// Statistics (and dlogits in place when grad) of the m rows of a chunk starting at ws.rows[c0];
// rows that are not scored get zero dlogits. Rows run in parallel; the sums are added in order.
template <typename T>
void chunk_stats(LmHeadStats& total, LmHeadWorkspace& ws, T* z, const int64_t* targets, int64_t c0,
                 int64_t m, int64_t V, bool grad, T scale) {
  grow(ws.row_loss, m);
  grow(ws.row_entropy, m);
  grow(ws.row_correct, m);
  parallel_for_rows(m, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t y = targets[ws.rows[c0 + i]];
      T* zi = z + i * V;
      if (y < 0) {
        if (grad) std::memset(zi, 0, static_cast<size_t>(V) * sizeof(T));
        continue;
      }
      const RowStats r = row_stats(zi, V, y, grad, scale);
      ws.row_loss[i] = r.loss;
      ws.row_entropy[i] = r.entropy;
      ws.row_correct[i] = r.correct ? 1 : 0;
    }
  });
  for (int64_t i = 0; i < m; ++i) {
    if (targets[ws.rows[c0 + i]] < 0) continue;
    total.loss_sum += ws.row_loss[i];
    total.entropy_sum += ws.row_entropy[i];
    total.correct += ws.row_correct[i];
    total.count += 1;
  }
}

}  // namespace sft::ops::lm_head_detail
