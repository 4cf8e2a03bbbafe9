// Linear: the one projection choke point. Every q/k/v/o/gate/up/down projection and the LM
// head go through it, so the compute dtype, LoRA (an adapter beside the weight, its forward,
// backward and merge) and tensor-parallel splits (a weight that is a slice of the full one,
// with the reduction after it) each live in this one place.
//
// y = x Wᵀ + b with W stored as transformers stores nn.Linear weights: (O, I); with a LoRA
// adapter (model/lora.h) y += scale · (drop(x) Aᵀ) Bᵀ. A frozen weight or bias (LoRA's base:
// an empty grad view) gets no gradient; the input gradient still flows through it.
// Tensor parallelism (tensor_parallel.h): a column-parallel Linear is just a smaller one (its
// weight is this rank's rows); a row-parallel one (o, down) names the group its partial
// outputs are summed over, before the bias. The input gradient of column-parallel layers is
// summed by the caller, once for all the Linears that share an input (q, k, v; gate, up).
// A 4-bit base (Parameter::quant4, QLoRA) is frozen and multiplied dequantized a panel at a
// time (ops::matmul_4bit) in the input's dtype; it never stacks. Its LoRA products y += u Bᵀ
// and dx += du A go into that product as r more steps of K (ops::LowRankTerm) where nothing
// comes between them (no bias, no output sum, no dropout mask on dx).
// Compute dtype follows the input view: an f32 (or f64) x multiplies the master weight; a bf16
// x multiplies the weight's bf16 copy with fp32 accumulation (torch autocast's bf16 matmul).
// Signature rule: outputs first, then inputs; parameter grads accumulate (+=), dx overwrites
// (=) unless accumulate_dx, which lets q, k and v of one input sum their input gradients.
// Dimensions: N rows, I in features, O out features.
#pragma once

#include <initializer_list>
#include <optional>

#include "model/lora.h"
#include "model/parameters.h"
#include "ops/ops.h"

namespace sft::model {

struct Linear {
  const Parameter* weight = nullptr;  // (O, I)
  const Parameter* bias = nullptr;    // (1, O) or null
  LoraAdapter* lora = nullptr;        // or null
  ShardGroup* sum_output = nullptr;   // row-parallel: y summed over this group; or null

  int64_t in_features() const { return weight->value.cols; }
  int64_t out_features() const { return weight->value.rows; }

  // y (N, O) f32 =; x (N, I) f32 or bf16. Where writes_rounded_output(), y may instead be
  // bf16: the fp32 result rounded once (f32_to_bf16), as ops::cast of the f32 y would round it.
  void forward(ops::View y, ops::View x) const;
  // Whether forward takes a bf16 y: a 4-bit base with nothing after its product (no bias, no
  // output sum; LoRA folded in), so ops::matmul_4bit rounds its own output and no fp32 y is
  // written only to be cast. The dense path keeps ops::matmul's fp32 c.
  bool writes_rounded_output() const;
  // merged = W + scale · B A (O, I) f32: the weight merge_and_unload() leaves; W without LoRA.
  void merged_weight(ops::View merged) const;
  // dx (N, I) f32 = or +=, or empty; dW, db +=; dy (N, O) f32; x as in forward. With a bf16 x,
  // dy16 (N, O) bf16 is scratch that receives dy rounded (the bf16 gradient autocast uses).
  // With a bf16 x and takes_rounded_dy(), dy may instead be bf16, already rounded by the kernel
  // that produced it (dy16 is then unused).
  void backward(ops::View dx, ops::View dy, ops::View x, ops::View dy16,
                bool accumulate_dx = false) const;
  // Whether backward under bf16 reads dy only rounded: no bias gradient (it sums fp32 dy);
  // LoRA under bf16 reads the rounded dy too.
  bool takes_rounded_dy() const;

  // The LM head: cross-entropy of x Wᵀ against targets, fused (ops::lm_head_cross_entropy);
  // with `train`, dx = and dW += the gradient of scale · Σ loss. A vocabulary-parallel head
  // names its shard (statistics and dx are then the whole head's). workspace: the caller's,
  // ops::lm_head_workspace_bytes of the call's shape. softcap: the logits' (Gemma's
  // final_logit_softcapping), 0 = none.
  ops::LmHeadStats cross_entropy(ops::View dx, ops::View logits, ops::View x,
                                 const int64_t* targets, double scale, bool train,
                                 ops::Workspace workspace, ops::VocabShard shard = {},
                                 double softcap = 0) const;

 private:
  ops::View weight_for(const ops::View& x) const;
  bool folds_lora() const;
};

// Linears that read one input and whose weights are consecutive rows of the parameter arenas
// (q, k, v of a layer: ParameterSet lays a layer's tensors out in HF order), computed as one:
// y = x [W₀; W₁; …]ᵀ gives every part's output as a column block of y, and backward is one dx
// and one dW product over the stacked rows, so each part's gradient lands in its own place.
// One product of N = ΣO instead of several thin ones: the weights stream once per pass, the
// input is read once, and the shape is one the GEMM library runs near its best (the 0.6B k and
// v products alone are 1024 × 1024 × 1024). Only parts without a bias, LoRA adapter, 4-bit base or
// output sum stack: those act per part.
struct StackedLinear {
  ops::View value;  // (ΣO, I) f32 master rows
  ops::View grad;   // (ΣO, I) f32, or empty when every part is frozen
  ops::View bf16;   // (ΣO, I) bf16 copies, or empty without them

  // The stack of `parts` in order, or nullopt when they do not stack: a bias, an adapter or an
  // output sum on any part, differing input widths, or rows that are not consecutive in each
  // arena (values, grads, bf16 copies). Allocates nothing: it runs every step.
  static std::optional<StackedLinear> of(std::initializer_list<const Linear*> parts);

  // y (N, ΣO) f32 =; x (N, I) f32 or bf16 (then the bf16 rows, fp32 accumulation).
  void forward(ops::View y, ops::View x) const;
  // dx (N, I) f32 = (or += with accumulate_dx), or empty; dW +=. dy (N, ΣO) in x's dtype: under
  // bf16 the caller has rounded each part's output gradient into its column block.
  void backward(ops::View dx, ops::View dy, ops::View x, bool accumulate_dx = false) const;

 private:
  ops::View weight_for(const ops::View& x) const;
};

}  // namespace sft::model
