// LoRA on a mixture of experts' stacked weights, as PEFT 0.21 adapts a 3-D nn.Parameter named in
// LoraConfig.target_parameters (peft/tuners/lora/layer.py, ParamWrapper):
//
//   lora_A (E·r, in)   rows [e·r, (e+1)·r) are expert e's A_e (r, in)
//   lora_B (out, r·E)  column j·E + e is column j of expert e's B_e (out, r)
//   W'_e = W_e + scale · B_e A_e     (out, in), scale = alpha / r (alpha / sqrt(r) with rsLoRA)
//
// (in, out) are the expert matrix's input and output sizes: transformers 5 holds qwen3_moe's,
// olmoe's, mixtral's and granitemoe's experts as (E, out, in) (gate_up_proj (E, 2I, C), down_proj
// (E, C, I)), gpt-oss's transposed (is_transposed: (E, in, out)), and PEFT sizes A and B from that;
// sft's stacks are (E·out, in) for every family (model/moe_checkpoint.h), so B_e A_e lands on
// sft's expert block as it is. One exception is data here: gpt-oss's gate_up_proj alternates gate
// and up along `out` (PEFT's row 2i + p is sft's row p·I + i), `parts` = 2.
// PEFT refuses lora_dropout > 0 for such a parameter (x cannot be factored out of
// B A drop(x) when A and B act on the weight), and so does sft (model/lora.h).
//
// The formulation is PEFT's own: the adapted weight is materialised, W' = W + delta in fp32, and
// the MoE block's existing grouped GEMMs read it (rounded to bf16 under bf16 compute, as autocast
// rounds the parametrized weight); the weight gradient the grouped GEMMs give for W' is dW', and
// dA_e = scale · B_eᵀ dW'_e, dB_e = scale · dW'_e A_eᵀ follow from it. This keeps the expert path
// free of LoRA branches and matches PEFT's numerics (a low-rank side product x A_eᵀ B_eᵀ would
// round differently under bf16); its cost is one stack-sized fp32 scratch (two in backward) per
// adapted stack, shared by all layers (ExpertLoraScratch), and the delta formed again in backward
// (E GEMMs of rank r: small next to the experts' own products for r much below the tokens).
//
// B's expert-minor columns are no strided view: B is seen as the dense (out·r, E) matrix M (M[o·r
// + j, e] = B_e[o, j]) and transposed once per pass by a GEMM with the identity (exact in fp32):
// row e of Mᵀ is B_e, dense. Its gradient goes back the same way.
//
// Signature rule: parameter grads accumulate (+=) into A's and B's gradients.
// Dimensions: E experts, r rank, in / out an expert matrix's input / output size.
#pragma once

#include <cstdint>

#include "core/arena.h"
#include "model/parameters.h"
#include "ops/view.h"

namespace sft::model {

// Scratch one adapted stack's passes use; the layers take turns (one layer runs at a time), so a
// LoraModel holds one per stack kind (gate_up, down), grown to the largest.
struct ExpertLoraScratch {
  explicit ExpertLoraScratch(Device device = Device::kCpu)
      : w(device), w16(device), dw(device), bt(device), dbt(device), eye(device) {}
  Arena w, w16;  // W' (E·out, in) f32, and bf16 under bf16 compute
  Arena dw;      // dW' (E·out, in) f32
  Arena bt;      // scale · Mᵀ (E, out·r) f32: row e is scale · B_e
  Arena dbt;     // (E, out·r) f32: row e is dB_e
  Arena eye;     // the (E, E) identity
  int64_t eye_size = 0;
};

struct ExpertLoraAdapter {
  const Parameter* a = nullptr;     // (E·r, in)
  const Parameter* b = nullptr;     // (out, r·E)
  const Parameter* base = nullptr;  // the frozen stack (E·out, in)
  int64_t experts = 0, r = 0;
  int64_t parts = 1;  // groups interleaved along PEFT's out (gpt-oss's gate_up_proj: 2)
  float scale = 1;
  ExpertLoraScratch* scratch = nullptr;

  // W' = W + scale · B_e A_e for every expert, (E·out, in) in `compute` (f32, or its bf16
  // rounding): the weights the grouped GEMMs read, valid until the next materialize of a stack of
  // the same kind.
  ops::View materialize(DType compute);
  // dW' (E·out, in) f32, zeroed: the grouped GEMMs' weight gradients accumulate into it.
  ops::View zeroed_weight_grad();
  // dA, dB += from dW' (after materialize in the same pass: it reuses scale · Mᵀ).
  void backward();

 private:
  int64_t out() const { return b->value.rows; }
  int64_t in() const { return a->value.cols; }
  // Row e of an (E, out·r) view as part p's (out / parts, r) rows: B_e's rows of that part.
  ops::View expert_part(ops::View rows, int64_t e, int64_t p) const;
  ops::View identity();
};

// A stacked expert weight as the MoE block's grouped GEMMs see it: the base stack, or with an
// adapter the materialised W + delta (and its gradient routed to the adapter).
struct ExpertStack {
  const Parameter* base = nullptr;
  ExpertLoraAdapter* lora = nullptr;

  // The weights for a pass in `compute` dtype: the base's value or bf16 copy, or W'.
  ops::View weights(DType compute) const;
  // Where the grouped GEMMs' weight gradient accumulates (empty: none wanted, a frozen stack).
  ops::View weight_grad() const;
  // After the weight gradients: the adapter's dA, dB from them.
  void finish_weight_grad() const;
};

}  // namespace sft::model
