// ops::lm_head_cross_entropy on the CPU: the chunked reference kernel (lm_head_reference.h).
#include <vector>

#include "ops/cpu/lm_head_reference.h"
#include "ops/ops.h"
#include "ops/profile.h"

namespace sft::ops {

namespace {

template <typename T>
LmHeadStats run(T* dx, T* dw, T* logits, const T* x, const T* w, const int64_t* targets, T scale,
                int64_t Tn, int64_t C, int64_t V) {
  thread_local std::vector<T> workspace;
  const cpu::LossStats s = cpu::lm_head_loss_forward(logits, x, w, targets, Tn, C, V, workspace);
  if (dx) cpu::lm_head_loss_backward(dx, dw, x, w, targets, scale, Tn, C, V, workspace);
  return {s.loss_sum, s.count, s.correct, s.entropy_sum};
}

}  // namespace

LmHeadStats lm_head_cross_entropy(View dx, View dw, View logits, View x, View w,
                                  const int64_t* targets, double scale) {
  const ScopedOp op("lm_head_cross_entropy");
  if (x.dtype == DType::kBF16) {  // bf16 values, fp32 arithmetic
    thread_local std::vector<float> x32, w32;
    x32.resize(static_cast<size_t>(x.numel()));
    w32.resize(static_cast<size_t>(w.numel()));
    cast(view_of(x32.data(), x.rows, x.cols), x);
    cast(view_of(w32.data(), w.rows, w.cols), w);
    return lm_head_cross_entropy(dx, dw, logits, view_of(x32.data(), x.rows, x.cols),
                                 view_of(w32.data(), w.rows, w.cols), targets, scale);
  }
  if (x.dtype == DType::kF64)
    return run(dx.empty() ? nullptr : dx.as<double>(), dw.empty() ? nullptr : dw.as<double>(),
               logits.empty() ? nullptr : logits.as<double>(), x.as<double>(), w.as<double>(),
               targets, scale, x.rows, x.cols, w.rows);
  return run(dx.empty() ? nullptr : dx.as<float>(), dw.empty() ? nullptr : dw.as<float>(),
             logits.empty() ? nullptr : logits.as<float>(), x.as<float>(), w.as<float>(), targets,
             static_cast<float>(scale), x.rows, x.cols, w.rows);
}

}  // namespace sft::ops
