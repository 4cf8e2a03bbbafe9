// Global gradient-norm clipping as torch.nn.utils.clip_grad_norm_ (L2 over all gradients).
#pragma once

#include <span>

namespace sft {

// The L2 norm of all gradients, summed in double in a fixed order (deterministic for any
// thread count). Non-finite gradients give a non-finite norm.
double global_grad_norm(std::span<const float> grads);

// Scales grads by max_norm / (norm + 1e-6) when that is below 1, as torch does; returns the
// norm before clipping (what HF logs as grad_norm). max_norm <= 0 disables clipping.
double clip_grad_norm(std::span<float> grads, double max_norm);
// The scaling clip_grad_norm applies, for a norm computed elsewhere (over several ranks).
void clip_to_norm(std::span<float> grads, double norm, double max_norm);
// That scaling's factor as the fp32 value the gradients are multiplied by: max_norm /
// (norm + 1e-6) when below 1, else 1 (also for max_norm <= 0 and a non-finite norm). The
// trainer hands it to AdamW, which applies it as it reads each gradient.
float clip_coefficient(double norm, double max_norm);

}  // namespace sft
