#include "optim/clip.h"

#include <cmath>
#include <vector>

#include "core/thread_pool.h"

namespace sft {

namespace {
// Fixed-size blocks (not thread chunks) so the summation order never depends on the pool size.
constexpr size_t kBlock = 1 << 14;
}  // namespace

double global_grad_norm(std::span<const float> grads) {
  const size_t blocks = (grads.size() + kBlock - 1) / kBlock;
  std::vector<double> partial(blocks, 0.0);
  default_thread_pool().parallel_for(blocks, [&](size_t, size_t begin, size_t end) {
    for (size_t b = begin; b < end; ++b) {
      double sum = 0.0;
      const size_t stop = std::min(grads.size(), (b + 1) * kBlock);
      for (size_t i = b * kBlock; i < stop; ++i) sum += static_cast<double>(grads[i]) * grads[i];
      partial[b] = sum;
    }
  });
  double total = 0.0;
  for (double p : partial) total += p;
  return std::sqrt(total);
}

double clip_grad_norm(std::span<float> grads, double max_norm) {
  const double norm = global_grad_norm(grads);
  if (max_norm <= 0 || !std::isfinite(norm)) return norm;
  const double coef = max_norm / (norm + 1e-6);
  if (coef >= 1.0) return norm;
  const float scale = static_cast<float>(coef);
  default_thread_pool().parallel_for(grads.size(), [&](size_t, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) grads[i] *= scale;
  });
  return norm;
}

}  // namespace sft
