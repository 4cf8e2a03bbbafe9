// Global gradient-norm clipping as torch.nn.utils.clip_grad_norm_ (L2 over all gradients).
#pragma once

#include <span>

#include "core/device.h"

namespace sft {

// The L2 norm of all gradients, summed in double in a fixed order (deterministic for any
// thread count; on CUDA the kernel's fixed blocks, ops/cuda/optimizer_kernels.cu). Non-finite
// gradients give a non-finite norm. `device`: where the gradients' memory is.
double global_grad_norm(std::span<const float> grads, Device device = Device::kCpu);

// Scales grads by max_norm / (norm + 1e-6) when that is below 1, as torch does; returns the
// norm before clipping (what HF logs as grad_norm). max_norm <= 0 disables clipping. (The
// trainer does not call it: it hands clip_coefficient to AdamW, which scales each gradient as
// it reads it; this is torch's API, kept as the tested reference of that coefficient.)
double clip_grad_norm(std::span<float> grads, double max_norm);
// clip_grad_norm's factor for a norm computed elsewhere (e.g. over several ranks), as the fp32
// value the gradients are multiplied by: max_norm / (norm + 1e-6) when below 1, else 1 (also
// for max_norm <= 0 and a non-finite norm).
float clip_coefficient(double norm, double max_norm);

}  // namespace sft
