// AdamW as torch.optim.AdamW (decoupled weight decay, bias correction, eps outside the
// square root), over the flat fp32 arenas of parameters, gradients and moments.
//
// The element update follows torch's single-tensor CPU path operation by operation, in
// float32 with the same scalar roundings, so results agree with torch to the last bits in
// practice (see tests/optim/adamw_test.cpp for the measured tolerance):
//   p *= 1 - lr·wd;  m = lerp(m, g, 1-β1);  v = β2·v + (1-β2)·g²;
//   p += -(lr / (1-β1^t)) · m / (sqrt(v) / sqrt(1-β2^t) + eps)
// Weight decay applies only to slices marked `decay` (HF excludes norms and biases).
// Elementwise, so any thread split gives identical results. The element kernel is
// ops::adamw_update (ops/cpu/optimizer_kernels.cpp, compiled without FP contraction).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/param_slice.h"
#include "core/tensor.h"

namespace sft {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

class AdamW {
 public:
  AdamW(size_t num_params, AdamWOptions options);

  // One optimizer step at learning rate `lr` (the scheduled value for this step).
  // With bf16_copies (an arena with the same offsets, e.g. the ParameterSet's bf16 copies),
  // the updated values are also rounded into it, in the same pass over memory. grad_scale
  // multiplies each gradient as it is read (the clip coefficient, optim/clip.h; 1: none).
  void step(std::span<float> params, std::span<const float> grads,
            std::span<const ParamSlice> slices, double lr, uint16_t* bf16_copies = nullptr,
            float grad_scale = 1.0f);

  int64_t steps_taken() const { return steps_; }
  const AdamWOptions& options() const { return options_; }
  // The moments (exp_avg, exp_avg_sq) and step count, for checkpoints.
  Tensor& exp_avg() { return exp_avg_; }
  Tensor& exp_avg_sq() { return exp_avg_sq_; }
  const Tensor& exp_avg() const { return exp_avg_; }
  const Tensor& exp_avg_sq() const { return exp_avg_sq_; }
  void set_steps_taken(int64_t steps) { steps_ = steps; }

 private:
  AdamWOptions options_;
  Tensor exp_avg_;     // (P,) f32
  Tensor exp_avg_sq_;  // (P,) f32
  int64_t steps_ = 0;
};

}  // namespace sft
