// torch's CPU weight initialisers on float32 tensors, bit for bit, drawn from a TorchGenerator
// (core/torch_generator.h), so that sft starts a LoRA run from the very numbers TRL + PEFT do.
//
// Tensor.uniform_(from, to) (ATen's CPU uniform_kernel, one element after another in memory
// order, no vectorised path): from and to are cast to float; each element takes one 32-bit draw
// u and is x · (to − from) + from with x = (u & (2^24 − 1)) · 2^-24, in float
// (at::transformation::uniform_real). torch 2.15's kernels are compiled for AVX2 / AVX-512 with
// floating contraction, so that expression is one fused multiply-add, rounded once (the plain
// multiply-then-add differs in ~1 element in 8; tools/make_lora_init_goldens.py checks both).
//
// nn.init.kaiming_uniform_(w, a) with the default mode fan_in and nonlinearity leaky_relu on a
// (rows, cols) weight: uniform_(−bound, bound) with, in doubles as Python computes them,
// gain = sqrt(2 / (1 + a²)), bound = sqrt(3) · (gain / sqrt(cols)).
#pragma once

#include <cstdint>
#include <span>

#include "core/torch_generator.h"

namespace sft::model {

void torch_uniform(TorchGenerator& gen, std::span<float> out, double from, double to);

// w holds a (w.size() / cols, cols) row-major weight.
void torch_kaiming_uniform(TorchGenerator& gen, std::span<float> w, int64_t cols, double a);

// The draws of n elements' uniform_ (of nn.Linear's constructor init of a weight that is then
// overwritten): the generator advances as if they had been filled.
void torch_skip_uniform(TorchGenerator& gen, int64_t n);

}  // namespace sft::model
