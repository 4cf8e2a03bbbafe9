// Fused LM head + cross-entropy, bf16 mixed precision (torch autocast): bf16 operands, fp32
// logits and statistics (double sums), dlogits rounded to bf16 for the two gradient products.
// See ops/lm_head_ce.h for the contract (vocabulary shards included); the chunking is
// lm_head_ce.cpp's.
#include <cstring>
#include <span>

#include "core/half.h"
#include "ops/cpu/lm_head_rows.h"
#include "ops/lm_head_ce.h"
#include "ops/ops.h"

namespace sft::ops {

LmHeadStats lm_head_cross_entropy_bf16(float* dx, float* dw, const uint16_t* x, const uint16_t* w,
                                       const int64_t* targets, float scale, int64_t Tn, int64_t C,
                                       int64_t V, LmHeadWorkspace& ws, int64_t vocab_begin,
                                       ShardGroup* group) {
  using namespace lm_head_detail;
  LmHeadStats total;
  if (dx) std::memset(dx, 0, static_cast<size_t>(Tn * C) * sizeof(float));
  const bool grad = dx || dw;
  const int64_t n = select_rows(ws, targets, Tn, group ? V * group->size() : V, false);
  if (n == 0 || V <= 0) return total;
  const int64_t R = chunk_rows(ws, n, V, 6);  // fp32 logits + bf16 dlogits
  const int64_t VB = vocab_block(ws, V);
  // A chunk's rows are padded with zero rows to a multiple of kRowQuantum: the scored-row count
  // changes every step, and oneDNN compiles a kernel per new shape (tens of ms each).
  constexpr int64_t kRowQuantum = 64;
  const int64_t Rp = (R + kRowQuantum - 1) / kRowQuantum * kRowQuantum;
  grow(ws.f32, Rp * (V + C));
  grow(ws.b16, Rp * (C + (grad ? V : 0)));
  float* z = ws.f32.data();
  float* dxs = z + Rp * V;
  uint16_t* xs = ws.b16.data();
  uint16_t* dz = xs + Rp * C;  // bf16 dlogits (Rp × V)
  for (int64_t c0 = 0; c0 < n; c0 += R) {
    const int64_t m = std::min(R, n - c0);
    const int64_t mp = (m + kRowQuantum - 1) / kRowQuantum * kRowQuantum;
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(xs + i * C, x + ws.rows[c0 + i] * C, static_cast<size_t>(C) * sizeof(uint16_t));
    std::memset(xs + m * C, 0, static_cast<size_t>((mp - m) * C) * sizeof(uint16_t));
    matmul_bf16(z, xs, w, mp, V, C, false, true, false);
    if (group)
      chunk_stats_shard(total, ws, z, targets, c0, m, V, grad, scale, vocab_begin, *group);
    else
      chunk_stats(total, ws, z, targets, c0, m, V, grad, scale);
    if (!grad) continue;
    parallel_for_rows(m, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        for (int64_t j = 0; j < V; ++j) dz[i * V + j] = f32_to_bf16(z[i * V + j]);
    });
    std::memset(dz + m * V, 0,
                static_cast<size_t>((mp - m) * V) * sizeof(uint16_t));  // no gradient
    for (int64_t v0 = 0; v0 < V; v0 += VB) {
      const int64_t nb = std::min(VB, V - v0);
      if (dx) matmul_bf16(dxs, dz + v0, w + v0 * C, mp, C, nb, false, false, v0 > 0, V, C, C);
      if (dw) matmul_bf16(dw + v0 * C, dz + v0, xs, nb, C, mp, true, false, true, V, C, C);
    }
    if (dx)
      for (int64_t i = 0; i < m; ++i)
        std::memcpy(dx + ws.rows[c0 + i] * C, dxs + i * C, static_cast<size_t>(C) * sizeof(float));
  }
  // A shard's dx is its slice's dZ W_local: the whole head's is the sum over the group.
  if (group && dx) group->sum(std::span<float>(dx, static_cast<size_t>(Tn * C)));
  return total;
}

}  // namespace sft::ops
