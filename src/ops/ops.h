// ops: every kernel the model, the loss and the optimizer call. Nothing here knows about models.
//
// Two levels. The kernels at the bottom take Views (ops/view.h: dtype, shape, device) and
// dispatch to a backend's implementation: ops/cpu/ (the fp32/fp64 reference kernels are the
// executable spec; fast paths are chosen at run time), ops/cuda/ when built. The host
// primitives just below (matmul on raw pointers, parallel_rows) are what CPU kernels use.
//
// Signature rule of every forward/backward pair: outputs first, then saved activations,
// inputs, weights, then sizes. Parameter grads accumulate (+=); activation grads overwrite (=).
// Threads: view-level ops are called from one thread at a time (the model's); each kernel fans
// out over the one pool inside. Scratch: kernels keep none of their own; the ops that need it
// (attention, the LM head) take a Workspace of the caller's memory (ops/workspace.h), sized by
// their *_workspace_bytes function.
//
// Every matrix multiply in sft goes through ops::matmul, so its implementation (OpenBLAS
// today; oneDNN, own microkernels or cuBLASLt later) can be swapped in one place.
// Row-major throughout. Deterministic: for a given thread count the same inputs give
// bit-identical outputs (work is split over output rows/columns only, never over K).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/param_slice.h"
#include "core/shard_group.h"
#include "ops/attention.h"
#include "ops/lm_head_blocks.h"
#include "ops/lm_head_ce.h"
#include "ops/moe.h"
#include "ops/quant4.h"
#include "ops/view.h"
#include "ops/workspace.h"

namespace sft::ops {

// C[M, N] = op(A) · op(B)            (accumulate = false)
// C[M, N] += op(A) · op(B)           (accumulate = true)
// op(A) is A [M, K] or, with trans_a, A stored as [K, M]; likewise op(B) is B [K, N] or,
// with trans_b, B stored as [N, K]. lda/ldb/ldc are row strides in elements (0 = dense).
// Splits the work over default_thread_pool() unless called from inside it (parallel = false).
template <typename T>
void matmul(T* c, const T* a, const T* b, int64_t M, int64_t N, int64_t K, bool trans_a,
            bool trans_b, bool accumulate, int64_t lda = 0, int64_t ldb = 0, int64_t ldc = 0,
            bool parallel = true);

// The same product with bf16 operands (raw bits, round-to-nearest-even bf16 as core/half.h)
// and fp32 accumulation into an fp32 C: the shape of torch's bf16 autocast matmuls.
void matmul_bf16(float* c, const uint16_t* a, const uint16_t* b, int64_t M, int64_t N, int64_t K,
                 bool trans_a, bool trans_b, bool accumulate, int64_t lda = 0, int64_t ldb = 0,
                 int64_t ldc = 0);

// fn(begin, end) over contiguous chunks of [0, n) on the default pool; serial when n is small
// relative to `grain` (work items per chunk worth a thread hand-off).
void parallel_rows(int64_t n, int64_t grain, void (*fn)(void*, int64_t, int64_t), void* ctx);

// Convenience wrapper for lambdas.
template <typename F>
void parallel_for_rows(int64_t n, int64_t grain, F&& f) {
  parallel_rows(
      n, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<F*>(ctx))(b, e); },
      static_cast<void*>(&f));
}

// ---- kernels on views -----------------------------------------------------------------
// Dimension names: N rows, C features, T tokens, H heads, D head dim, V vocab.

// c (M, N) =, or += with accumulate, op(a) · op(b), op = transpose when asked. c is f32 (f64
// for the reference); a and b are both f32, both bf16 (fp32 accumulation) or both f64. Any of
// the three may be a column block (View::columns) (CPU and CUDA): its stride is the leading
// dimension.
void matmul(View c, View a, View b, bool trans_a, bool trans_b, bool accumulate);

// c =, or += with accumulate, a · Wᵀ (trans_w: c (M, rows), a (M, cols)) or a · W (c (M, cols),
// a (M, rows)) for a 4-bit W (ops/quant4.h): the frozen base of QLoRA. W is dequantized into
// a's dtype, as bitsandbytes dequantizes into the compute dtype: a f32 (c f32), or a bf16
// with fp32 accumulation into an f32 c. The CPU kernel dequantizes a panel of the product's
// output columns at a time (W's rows for a · Wᵀ, its columns for a · W; the whole of K) and
// multiplies it with ops::matmul, so the whole matrix never exists unpacked. `extra`
// (quant4.h): a rank-r term summed in as more steps of K (LoRA's product, folded in).
// c may instead be bf16 (autocast's rounded projection output): the same fp32 sum over K, the
// term included, rounded once (f32_to_bf16) — bit for bit ops::cast of the f32 c — without an
// f32 C in memory; accumulate is refused then (the sum would be rounded twice).
void matmul_4bit(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate,
                 const LowRankTerm& extra = {});

// LoRA's two backward products over its output gradient g (N, O): db (O, r) += gᵀ · u and
// du (N, r) = g · b, for u (N, r) and b (O, r). g, u, b all f32, all bf16 (fp32 accumulation)
// or all f64 (the reference); db and du f32 (f64). Any view may be a column block. The sums are
// matmul's, possibly in another order: on an AMX CPU under bf16 both come from one pass over g
// (cpu/lora_backward_amx.h), deterministic for any thread count; elsewhere two matmuls.
void lora_backward_products(View db, View du, View g, View u, View b);

// y = w · x / sqrt(mean(x²) + eps) per row: out (N, C) =, rstd (N, 1) =; x (N, C); w (1, C).
// With f32 x, rstd, w, out may be bf16: the f32 result rounded (f32_to_bf16) in the same pass.
void rmsnorm_forward(View out, View rstd, View x, View w, double eps);
// dx (N, C) =; dw (1, C) +=, or empty for a frozen weight (LoRA: no pass over the rows for it);
// dout; x and rstd as saved.
void rmsnorm_backward(View dx, View dw, View dout, View x, View rstd, View w);
// The residual add and the norm after it in one pass: sum (N, C) = a + b, then out and rstd as
// rmsnorm_forward(out, rstd, sum, w, eps) computes them (the same bits as ops::add and that
// call). sum, a, b share rmsnorm's x dtype; out may be bf16 as there.
void add_rmsnorm_forward(View sum, View out, View rstd, View a, View b, View w, double eps);

// In place on x (T, NH·D) with cos, sin (T, R/2): rotation by +θ (forward) or −θ (backward) of
// each head's first R dims (head_dim D; 0 = R, every dim rotates; R < D is partial rotary,
// Phi-3/4's partial_rotary_factor). x may be a column block (View::columns).
void rope_forward(View x, View cos, View sin, int64_t head_dim = 0);
void rope_backward(View dx, View cos, View sin, int64_t head_dim = 0);

// h = silu(gate) · up elementwise: h =; backward dgate, dup =. With bf16 gate and up (bf16
// compute) h, and dgate with dup, are f32, or bf16: the f32 values rounded in the same pass.
void swiglu_forward(View h, View gate, View up);
void swiglu_backward(View dgate, View dup, View dh, View gate, View up);

// gpt-oss's clamped SwiGLU (transformers' GptOssExperts._apply_gate): g = min(gate, limit),
// u = clamp(up, −limit, limit), h = (u + 1) · g · σ(alpha · g). Backward: dgate, dup =, zero
// where the clamp cut the input off (gate > limit, |up| > limit; torch's clamp passes the
// gradient at the limit itself). swiglu's shapes, dtypes and bf16 forms; alpha and limit are
// taken in the computation's precision (f32 for f32 and bf16 views), as torch takes a scalar.
void swiglu_clamped_forward(View h, View gate, View up, double alpha, double limit);
void swiglu_clamped_backward(View dgate, View dup, View dh, View gate, View up, double alpha,
                             double limit);

// h = gelu_tanh(gate) · up (Gemma's gated MLP, gelu_pytorch_tanh: PyTorch's tanh
// approximation), with swiglu's shapes, dtypes and bf16 forms.
void gelu_tanh_gated_forward(View h, View gate, View up);
void gelu_tanh_gated_backward(View dgate, View dup, View dh, View gate, View up);

// A vocabulary-parallel table (tensor parallelism): this rank's rows are the vocabulary ids
// [begin, begin + rows) of the whole table, the other ranks of `group` hold the rest. The
// default is the whole vocabulary on one rank (no group). `vocab` is the whole vocabulary
// when the split is padded (every rank's rows · group size > vocab; model/tensor_parallel.h):
// rows from id `vocab` on are padding, never looked up, scored or predicted. 0: no padding.
struct VocabShard {
  int64_t begin = 0;
  ShardGroup* group = nullptr;
  int64_t vocab = 0;
  // The LM head only, without a group: w's rows are read from here a vocabulary block at a
  // time, not from w's data (w still gives the shape; ops/lm_head_blocks.h). CPU fp32.
  LmHeadWeightBlocks* weight_blocks = nullptr;
};

// out (T, C) = table[ids]; backward dtable (V, C) += scatter of dout in token order.
// Dtypes: all f32, all f64, or a bf16 table with an f32 out (forward only: a frozen table held
// in bf16, whose rows widen exactly; model/frozen_base.h).
// With a shard, ids are whole-vocabulary ids: out = the sum over the group of each rank's
// rows (ids outside a rank's rows contribute zero there), and dtable += only for this rank's
// ids (dout is the same on every rank).
void embedding_forward(View out, const int64_t* ids, View table, VocabShard shard = {});
void embedding_backward(View dtable, View dout, const int64_t* ids, VocabShard shard = {});

// Attention over segments (ops/attention.h): out (Tq, H·D) =, lse (Tq, H) = the log-sum-exp
// saved for backward; q (Tq, H·D); k, v (Tk, Hkv·D). Backward: dq =, dk and dv = on the key
// rows the segments cover. Dtypes: all f32, all f64 (reference), or bf16 attention: q, k, v
// bf16, out bf16 or f32, lse f32 and, backward, dout, dq, dk, dv f32 (dout is rounded to bf16
// inside, as autocast's gradient); any other mix is refused. workspace: at least
// attention_workspace_bytes (ops/attention.h) of a shape that covers the call.
void attention_forward(View out, View lse, View q, View k, View v,
                       std::span<const AttentionSegment> segments, const AttentionDims& dims,
                       Workspace workspace);
void attention_backward(View dq, View dk, View dv, View dout, View out, View lse, View q, View k,
                        View v, std::span<const AttentionSegment> segments,
                        const AttentionDims& dims, Workspace workspace);

// Attention sinks (gpt-oss): a logit per head, sinks (H), that joins every query's softmax
// denominator and carries no value. Forward, in place after attention_forward: lse (T, H) ←
// log(e^lse + e^sink), out (T, H·D) ← out · e^(lse_before − lse_after) (out f32 or f64: a bf16
// output is rounded after this). attention_backward then takes the updated out and lse as they
// are. Backward: dsinks (H) += −Σ_t e^(sink − lse) · rowsum(dout ⊙ out) per head; out f32, f64
// or bf16, the rest f32 (f64 with f64 out). CPU only.
void attention_sinks_forward(View out, View lse, View sinks);
void attention_sinks_backward(View dsinks, View dout, View out, View lse, View sinks);

// LM head + cross-entropy in one pass, never (T × V): x (T, C), w (V, C); targets[t] the id
// scored at row t or -1. With dx/dw given, the gradient of scale · Σ loss is produced here:
// dx (T, C) = (unscored rows 0), dw (V, C) +=. logits (T, V) = x wᵀ for every row when given.
// x and w are f32 (f64 reference) or bf16 (dx, dw, logits f32).
// With a shard, w holds the vocabulary rows [begin, begin + w.rows) and targets are
// whole-vocabulary ids: the row statistics are combined over the group (max, then the sums;
// never the logits), so the returned statistics and dx are the whole head's, identical on
// every rank, and dw += this rank's rows of the gradient. No logits with a shard.
// workspace: at least lm_head_workspace_bytes of this call's shape (ops/workspace.h).
// softcap > 0 (Gemma 2's final_logit_softcapping): every logit z becomes softcap·tanh(z /
// softcap) before the cross-entropy and in the returned logits, and the gradient through it
// is multiplied by 1 − tanh²; 0 = none. shard.weight_blocks: see VocabShard.
LmHeadStats lm_head_cross_entropy(View dx, View dw, View logits, View x, View w,
                                  const int64_t* targets, double scale, Workspace workspace,
                                  VocabShard shard = {}, double softcap = 0);
// The workspace of a call with up to `rows` rows of x (dtype, width `hidden`) against `vocab`
// rows of w (a shard's own rows with `shard`); `logits` when full logits are asked for (bf16
// then widens x and w to fp32 there: (rows + vocab) · hidden · 4 bytes more).
struct LmHeadShape {
  DType dtype = DType::kF32;
  int64_t rows = 0, hidden = 0, vocab = 0;
  bool logits = false;
  bool shard = false;
};
size_t lm_head_workspace_bytes(const LmHeadShape& shape);

// dst += src (same shape). dst and src may differ in dtype only as f32 += bf16. With `rounded`
// (bf16, same shape; f32 dst and src), the sum is also written there rounded (f32_to_bf16) in
// the same pass: the bf16 copy a bf16 matmul reads next.
void add(View dst, View src, View rounded = {});
// y (N, O) += b (1, O) broadcast over rows; db (1, O) += column sums of dy (N, O).
void add_bias(View y, View b);
void bias_backward(View db, View dy);
// AdamW's element update as torch's single-tensor CPU path computes it, operation by operation
// in fp32 (optim/adamw.h derives the scalars): p, m, v updated in place from g · grad_scale.
// grad_scale is the gradient-clipping coefficient folded into the update's read of g: the same
// fp32 product torch's clip_grad_norm_ stores in its own pass over the gradients (1: none).
struct AdamWScalars {
  float neg_step_size, bc2_sqrt, eps, lerp_weight, beta2, one_minus_beta2, decay_factor;
  bool decay;
  float grad_scale = 1.0f;
};
// With bf16_copy given, the updated p is also written there rounded to bf16 (the compute copy).
void adamw_update(View param, View grad, View exp_avg, View exp_avg_sq, const AdamWScalars& k,
                  View bf16_copy = {});
// adamw_update over many tensors of one arena in one call: slice s updates elements [offset,
// offset + size) of the five views (dense, the same length), with weight decay where k.decay
// and the slice's decay are both set. The same bits as one adamw_update per slice; the CPU
// splits all slices' elements evenly across its threads at once, so the few hundred small
// tensors of LoRA's adapters cost one thread hand-off a step instead of one each.
void adamw_update_slices(View param, View grad, View exp_avg, View exp_avg_sq,
                         std::span<const ParamSlice> slices, const AdamWScalars& k,
                         View bf16_copy = {});
// Σ x² in double over fixed-size blocks (the order never depends on the thread count).
double sum_of_squares(View x);
// x *= factor.
void scale(View x, float factor);
// x += c (f32): the (1 + w) weights of Gemma's norms (model/blocks/norm_block.h).
void add_scalar(View x, float c);
// x[i] += (2 u_i − 1) · magnitude (f32, dense, element i in row-major order), u_i the uniform of
// word position + i of Philox stream (seed, stream) (core/philox.h): NEFTune's noise, the same
// bits on every backend and thread count. Two roundings per element (the noise, then the sum).
void add_uniform_noise(View x, float magnitude, uint64_t seed, uint64_t stream, uint64_t position);
// Inverted dropout with a counter-based mask: element k (dense, row-major) keeps when the
// uniform of Philox word position + k of stream (seed, stream) is ≥ p; dst = mask ⊙ src ·
// dropout_keep_scale(p), or dst += that with accumulate (f32 only). dst and src f32, or both
// bf16 (the product rounded once to bf16). The same arguments give the same mask on every
// backend and thread count: LoRA's adapter dropout draws its forward's mask again in the
// backward (model/lora.h).
void dropout(View dst, View src, float p, uint64_t seed, uint64_t stream, uint64_t position,
             bool accumulate);
// 1 / (1 − p) in f32, the scale every backend's dropout multiplies the kept elements by.
inline float dropout_keep_scale(float p) {
  return 1.0f / (1.0f - p);
}

// x = 0.
void zero(View x);
// dst = src converted (f32 ↔ bf16 round-to-nearest-even, f32 ↔ f64). Dense views need only the
// same element count; either may be a column block (View::columns), which needs the
// same (rows, cols): this is how a block is copied out of, or into, a wider matrix.
void cast(View dst, View src);

// ---- mixture of experts (ops/moe.h: the routing, the permuted rows, the expert blocks) ----

// The token-to-expert sort (host memory, not dispatched: index arithmetic every backend
// shares): from expert_of (T·k) fills offsets (E + 1), row_of (T·k) and token_of (T·k) by a
// stable counting sort, the same for any thread count. Fails naming an expert id out of range.
void moe_sort_tokens(int64_t* offsets, int64_t* row_of, int64_t* token_of, const int64_t* expert_of,
                     int64_t tokens, int64_t top_k, int64_t experts);
// The router after its projection, as transformers' Qwen3-MoE / Mixtral / OLMoE routers:
// probs (T, E) = softmax(logits) in fp32; expert_of (T·k) = the k largest (descending, ties to
// the lower expert id); weights (T, k) = their probabilities, divided by their sum with
// `normalize` (norm_topk_prob). logits, probs, weights f32 (f64 reference).
void moe_router_forward(View probs, View weights, int64_t* expert_of, View logits, int64_t top_k,
                        bool normalize);
// dlogits (T, E) = d through the softmax of dweights (T, k) (through the renormalisation with
// `normalize`) plus dprobs (T, E), a gradient on the probabilities themselves (the
// load-balancing loss's), or empty.
void moe_router_backward(View dlogits, View dweights, View dprobs, View probs,
                         const int64_t* expert_of, bool normalize);
// xs (R, C) = x[token_of[r]] (the permuted rows); backward dx (T, C) = Σ_j dxs[row_of[t·k + j]]
// (a gather per token: no scatter, no atomics). f32, bf16 (forward) or f64; dx, dxs f32/f64.
void moe_permute_forward(View xs, View x, const ExpertRouting& routing);
void moe_permute_backward(View dx, View dxs, const ExpertRouting& routing);
// c (R, N) =, or += with accumulate, per expert e: rows [offsets[e], offsets[e+1]) of c are those
// rows of a times op(W_e), W_e = `block` of w (ops/moe.h), op = transpose with trans_w (c_e =
// a_e W_eᵀ, the experts' forward) or none (c_e = a_e W_e, their input gradient). Each group is
// one ops::matmul (so f32, bf16 with fp32 accumulation, or f64, exactly as matmul computes).
void grouped_matmul(View c, View a, View w, const ExpertRouting& routing, ExpertBlock block,
                    bool trans_w, bool accumulate);
// dw's block e += dy_eᵀ · x_e: the weight gradient of grouped_matmul(…, trans_w = true). dw f32
// (f64), dy (R, block.rows) and x (R, K) both f32, both bf16 or both f64.
void grouped_matmul_weight_grad(View dw, View dy, View x, const ExpertRouting& routing,
                                ExpertBlock block);
// out (T, C) = Σ_j weights[t, j] · ys[row_of[t·k + j]], the slots summed in ascending expert
// order (transformers' index_add_ over the experts in order); ys, out, weights f32 (f64).
// Backward: dys (R, C) = weights · dout of the row's token; dweights (T, k) = dout[t] · ys[row].
void moe_combine_forward(View out, View ys, View weights, const ExpertRouting& routing);
void moe_combine_backward(View dys, View dweights, View dout, View ys, View weights,
                          const ExpertRouting& routing);
// The load-balancing loss's sums (transformers' load_balancing_loss_func): sums (2, E) f32 +=,
// row 0 the number of tokens that chose each expert among their top_k (expert_of (T·k)),
// row 1 each expert's probability summed over the tokens (probs (T, E) f32); tokens in order.
void moe_router_load(View sums, View probs, const int64_t* expert_of, int64_t top_k,
                     const uint8_t* padding);

}  // namespace sft::ops
