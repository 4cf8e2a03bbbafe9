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
// ops::adamw_update (ops/cpu/optimizer_kernels.cpp, compiled without FP contraction; on CUDA
// ops/cuda/optimizer_kernels.cu, the same operations without fused multiply-adds, so a device
// optimizer takes the CPU's bits).
//
// Device: an optimizer built for Device::kCuda keeps its moments in an arena on the device and
// steps spans of device memory (the ParameterSet's arenas there); exp_avg() / exp_avg_sq() are
// the host's only. A checkpoint reads copy_to(Device::kCpu), a resume loads copy_state_from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/arena.h"
#include "core/device.h"
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
  AdamW(size_t num_params, AdamWOptions options, Device device = Device::kCpu);

  // One optimizer step at learning rate `lr` (the scheduled value for this step).
  // With bf16_copies (an arena with the same offsets, e.g. the ParameterSet's bf16 copies),
  // the updated values are also rounded into it, in the same pass over memory. grad_scale
  // multiplies each gradient as it is read (the clip coefficient, optim/clip.h; 1: none).
  void step(std::span<float> params, std::span<const float> grads,
            std::span<const ParamSlice> slices, double lr, uint16_t* bf16_copies = nullptr,
            float grad_scale = 1.0f);

  int64_t steps_taken() const { return steps_; }
  const AdamWOptions& options() const { return options_; }
  Device device() const { return device_; }
  size_t size() const { return num_params_; }
  // The moments (exp_avg, exp_avg_sq) and step count, for checkpoints (a host optimizer's:
  // a device optimizer fails naming copy_to).
  Tensor& exp_avg() { return check_host(), exp_avg_; }
  Tensor& exp_avg_sq() { return check_host(), exp_avg_sq_; }
  const Tensor& exp_avg() const { return check_host(), exp_avg_; }
  const Tensor& exp_avg_sq() const { return check_host(), exp_avg_sq_; }
  void set_steps_taken(int64_t steps) { steps_ = steps; }
  // The same state (moments, step count, options) on `device`: a device run's checkpoint
  // writes copy_to(Device::kCpu); a resume loads the host's with copy_state_from.
  AdamW copy_to(Device device) const;
  void copy_state_from(const AdamW& other);

 private:
  void check_host() const;
  float* moment_data(int which);  // 0: exp_avg, 1: exp_avg_sq, on device()
  const float* moment_data(int which) const { return const_cast<AdamW*>(this)->moment_data(which); }

  AdamWOptions options_;
  Device device_ = Device::kCpu;
  size_t num_params_ = 0;
  Tensor exp_avg_;        // (P,) f32 on the host; empty on a device
  Tensor exp_avg_sq_;     // (P,) f32 on the host; empty on a device
  Arena device_moments_;  // on a device: exp_avg (P), then exp_avg_sq (P) at kArenaAlignment
  int64_t steps_ = 0;
};

}  // namespace sft
