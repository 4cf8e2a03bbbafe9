#include "optim/clip.h"

#include <cmath>

#include "ops/ops.h"

namespace sft {

double global_grad_norm(std::span<const float> grads, Device device) {
  return std::sqrt(ops::sum_of_squares(
      ops::view_of(grads.data(), 1, static_cast<int64_t>(grads.size()), device)));
}

double clip_grad_norm(std::span<float> grads, double max_norm) {
  const double norm = global_grad_norm(grads);
  const float coef = clip_coefficient(norm, max_norm);
  if (coef != 1.0f && !grads.empty())
    ops::scale(ops::view_of(grads.data(), 1, static_cast<int64_t>(grads.size())), coef);
  return norm;
}

float clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0 || !std::isfinite(norm)) return 1.0f;
  const double coef = max_norm / (norm + 1e-6);
  return coef >= 1.0 ? 1.0f : static_cast<float>(coef);
}

}  // namespace sft
