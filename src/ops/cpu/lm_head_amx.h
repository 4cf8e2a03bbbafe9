// The bf16 LM head's two large products on our own AMX tiles (amx_panels.h), for
// lm_head_ce_bf16.cpp on an AMX CPU: the bf16 logits of the whole vocabulary, Z = X Wᵀ, and
// the input gradient's share of a vocabulary block, dX += dZ_b W_b. W's bf16 rows are packed
// into tiles a panel at a time (1 MiB, in L2), X's rows once per chunk, dZ's block once per
// block.
//
// Why not oneDNN's matmul as before: it repacks W's block into its own layout on every call and
// ran the frozen head (forward + dX, the QLoRA step) at ~0.6 TFLOP/s on 2 threads of the
// loaded machine; the tile product from L2 runs at ~1.5 a thread (docs/benchmarks.md).
// Numerics: tdpbf16ps, fp32 accumulation in ascending k per output element, independent of
// the thread count; oneDNN's sums differ in the last bits, as two fp32 summation orders do.
// The caller holds use_amx().
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// X's rows (M × C bf16, dense) as A tiles, packed once per chunk for all of its logits.
struct LmHeadRowTiles {
  const uint16_t* tiles;
  int64_t M, KT;
};

// Packs x into this thread's buffer: valid until the next call on the same thread.
LmHeadRowTiles pack_lm_head_rows(const uint16_t* x, int64_t M, int64_t C);

// z (rows × V bf16, ldz elements per row) = X · Wᵀ rounded to bf16 for all of W's V rows
// (V × C bf16, dense), the first `rows` of X's M (the rest, zero padding, are not stored): one
// amx_panel_product_bf16 over the whole vocabulary, W's rows packed into tiles a panel at a
// time, each 32-row strip rounded into z while in cache (streaming stores), so no fp32 block of
// logits goes through memory. Bits: each logit is the one ascending sum over C, rounded to
// nearest even, as a product of the whole block then a rounding.
void lm_head_logits_bf16_amx(uint16_t* z, int64_t ldz, const LmHeadRowTiles& x, int64_t rows,
                             const uint16_t* w, int64_t V, int64_t C);

// dx (M × C fp32, dense) =, or += with accumulate, dZ_b · W_b: dZ_b (M × nb bf16, ld_dz
// elements per row), W_b's nb rows (nb × C bf16, dense).
void lm_head_dx_amx(float* dx, const uint16_t* dz, int64_t ld_dz, int64_t M, int64_t nb,
                    const uint16_t* w_rows, int64_t C, bool accumulate);

}  // namespace sft::ops::cpu
