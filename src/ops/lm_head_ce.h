// Fused LM head + token cross-entropy: logits, loss statistics and both gradients in one call.
//
// The trainer knows the loss scale (1 / trained tokens of the global batch) before the forward,
// so the gradient is produced here and the backward does nothing for the head. Each logit is
// computed once (6·T·C·V FLOPs with both gradients, not the 8 of forward + recomputing backward),
// and the (T × V) logits are never materialised: the scored rows go through in chunks of m rows.
//
// Per chunk: Z (m × V) = X_c Wᵀ (W streams once, over the vocabulary blocks of the gradient
// products below, so that a caller can hand W over a block at a time: ops/lm_head_blocks.h,
// ZeRO-3's head, which never holds the whole table); per row, in one L2-resident pass
// set (the row is V·4 bytes = 594 KiB for Qwen), max, exp once, double sums, then Z becomes
// dZ = scale·(softmax − onehot) in place; then dX_c = dZ W and dW += dZᵀ X_c. W is read twice
// and dW read+written once per chunk, so the chunk height m sets how often the 151936 × C weight
// streams through the cache: T/m times, against m·V·4 bytes held for Z.
//
// The row pass is memory-light (one row at a time in L2) and the three products run at the
// matmul backend's rate, so the kernel is compute-bound once m is large: m = 512 by default,
// with Z = 311 MB in fp32, and the two gradient products run over vocabulary blocks of 16384
// rows so that both read dZ_b while it is in cache (together 10% faster than 256-row chunks of
// whole rows at C = 512, 8% at C = 1024; the table is in ops/cpu/lm_head_ce.cpp).
// LmHeadTuning::rows_per_chunk and vocab_block override both. The statistics need the whole
// row's log-sum-exp before any dlogit, so a row's logits are held until its row pass: blocking
// the logits product itself by vocabulary would only pay with a second exp per logit (online
// log-sum-exp), which we avoid.
//
// Numerics: exp in the compute dtype, per-row sums in double, the statistics reduced over rows
// in row order, so results are bit-identical for a given thread count (the matmuls split over
// output rows/columns only). The float path reproduces model::lm_head_loss_forward's statistics.
//
// Vocabulary shards (tensor parallelism): w is this rank's rows [vocab_begin, vocab_begin + V)
// of a (V · group.size(), C) head, whose rows from `vocab` on (the whole vocabulary; 0 = none)
// are padding: outside the softmax, never the argmax, zero gradient (tensor_parallel.h). Each
// chunk's logits stay local; per row the ranks combine the max (one collective), then the exp sums,
// the target logit and the argmax facts (one sum of doubles), so every rank returns the whole
// head's statistics; dw += this slice's gradient, and dx, each rank's dZ W_local, is summed over
// the group once at the end. Every rank makes the same collective calls (the rows depend only on
// the targets, which are replicated).
//
// Signature rule: outputs first, then inputs, weights, then sizes. dx overwrites (=), dw
// accumulates (+=). Dimensions: Tn tokens, C hidden, V vocabulary (this rank's rows).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/shard_group.h"
#include "ops/lm_head_blocks.h"
#include "ops/workspace.h"

namespace sft::ops {

struct LmHeadStats {
  double loss_sum = 0;     // Σ cross-entropy over scored rows
  int64_t count = 0;       // scored rows
  int64_t correct = 0;     // scored rows whose argmax (first max on ties) equals the target
  double entropy_sum = 0;  // Σ entropy of the softmax over scored rows
};

// The kernel's tuning and its scratch memory, which the caller owns (ops/workspace.h): size it
// with lm_head_workspace_bytes for the largest call. The two knobs are for benchmarks and tests;
// 0 = the measured default. A bf16 call without a group also holds one fp32 row of V per worker
// of default_thread_pool() (the row pass widens its bf16 logits there).
struct LmHeadTuning {
  int64_t rows_per_chunk = 0;  // m: rows whose logits are held at once (memory m·V·4 bytes)
  int64_t vocab_block = 0;     // vocabulary block of the gradient products; 0 or ≥ V = whole rows
};
struct LmHeadWorkspace {
  LmHeadTuning tuning;
  Workspace memory;
};

// The bytes a raw kernel below needs, at most, for Tn rows against V vocabulary rows of width
// C: T = float, double or uint16_t (bf16); `shard` for a call with a group. Every call with at
// most Tn rows fits (fewer scored rows need less).
template <typename T>
size_t lm_head_kernel_workspace_bytes(int64_t Tn, int64_t C, int64_t V, bool shard,
                                      const LmHeadTuning& tuning = {});

// x (Tn, C); w (V, C) as nn.Linear stores it; targets (Tn): the id scored at row t, or -1.
// dx (Tn, C) = scale · dLoss/dx (unscored rows → 0), or null; dw (V, C) += scale · dLoss/dw, or
// null (both null = evaluation: statistics only). logits (Tn, V) = x wᵀ for every row when
// non-null; otherwise only scored rows are computed.
// Loss = Σ over scored rows of CE; correct = argmax == target; entropy of the softmax.
// With a group (a vocabulary shard, see above): targets are ids in [0, vocab) (vocab 0: V ·
// group->size()) and logits must be null.
// softcap > 0 (Gemma's final_logit_softcapping): each logit z is softcap · tanh(z / softcap)
// before the statistics and in `logits`, and its gradient carries 1 − tanh²; with a gradient
// the chunks are then half as tall, the other half of Z holding the chunk's tanh (a call whose
// chunk is one row keeps that row's tanh in a vector of V).
template <typename T>  // float, double
LmHeadStats lm_head_cross_entropy(T* dx, T* dw, T* logits, const T* x, const T* w,
                                  const int64_t* targets, T scale, int64_t Tn, int64_t C, int64_t V,
                                  LmHeadWorkspace& ws, int64_t vocab_begin = 0,
                                  ShardGroup* group = nullptr, int64_t vocab = 0, T softcap = 0,
                                  LmHeadWeightBlocks* blocks = nullptr);

// bf16 mixed precision (torch autocast semantics): x and w are bf16 bits; logits with fp32
// accumulation (ops::matmul_bf16) rounded to bf16 (autocast's lm_head output), softmax statistics
// of those in fp32 with double sums (transformers' loss upcasts the logits); dlogits rounded to
// bf16 before the two gradient products (autocast's bf16 grad); dx fp32 =, dw fp32 +=. Without a
// group every scored row of the call is one chunk when the bf16 logits fit 512 MiB, so W and dW
// stream once per call (ops/cpu/lm_head_ce_bf16.cpp). softcap > 0: the bf16 logits capped as
// transformers caps them under autocast (bf16 ops / cap, tanh, · cap, each rounded; their bf16
// gradients likewise), in the same memory.
LmHeadStats lm_head_cross_entropy_bf16(float* dx, float* dw, const uint16_t* x, const uint16_t* w,
                                       const int64_t* targets, float scale, int64_t Tn, int64_t C,
                                       int64_t V, LmHeadWorkspace& ws, int64_t vocab_begin = 0,
                                       ShardGroup* group = nullptr, int64_t vocab = 0,
                                       float softcap = 0);

}  // namespace sft::ops
