// torch's CPU uniform_ and kaiming_uniform_ on float32; see the contract in torch_init.h.
#include "model/torch_init.h"

#include <cmath>

namespace sft::model {

void torch_uniform(TorchGenerator& gen, std::span<float> out, double from, double to) {
  const float lo = static_cast<float>(from), hi = static_cast<float>(to);
  const float span = hi - lo;
  constexpr float kUnit = 0x1p-24f;  // 2^-24: the float mantissa's 24 bits of the draw
  for (float& v : out) {
    const float x = static_cast<float>(gen.random() & 0xffffffu) * kUnit;  // exact
    // std::fma, not x * span + lo: one rounding, as torch's contracted kernel; the build does
    // not contract on its own (no -mfma), so the explicit call is what makes it one.
    v = std::fma(x, span, lo);
  }
}

void torch_kaiming_uniform(TorchGenerator& gen, std::span<float> w, int64_t cols, double a) {
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = std::sqrt(3.0) * (gain / std::sqrt(static_cast<double>(cols)));
  torch_uniform(gen, w, -bound, bound);
}

void torch_skip_uniform(TorchGenerator& gen, int64_t n) {
  for (int64_t i = 0; i < n; ++i) (void)gen.random();
}

}  // namespace sft::model
