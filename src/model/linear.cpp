// Linear forward/backward and the LM head's fused loss, on ops::matmul. See linear.h.
#include "model/linear.h"

#include <cstring>
#include <vector>

#include "core/error.h"

namespace sft::model {

ops::View Linear::weight_for(const ops::View& x) const {
  if (x.dtype != DType::kBF16) return weight->value;
  if (weight->bf16.empty())
    fail("model", "bf16 input to '" + weight->spec.name + "', which has no bf16 copy");
  return weight->bf16;
}

void Linear::forward(ops::View y, ops::View x) const {
  ops::matmul(y, x, weight_for(x), false, true, false);
  if (sum_output) sum_output->sum({y.as<float>(), static_cast<size_t>(y.numel())});
  if (bias) ops::add_bias(y, bias->value);
  if (lora) lora->forward(y, x);
}

void Linear::merged_weight(ops::View merged) const {
  std::memcpy(merged.data, weight->value.data, static_cast<size_t>(merged.numel()) * sizeof(float));
  if (!lora) return;
  // Δ = (B A) · scale, in that order, as PEFT's get_delta_weight.
  std::vector<float> delta(static_cast<size_t>(merged.numel()));
  const ops::View d = ops::view_of(delta.data(), merged.rows, merged.cols);
  ops::matmul(d, lora->b->value, lora->a->value, false, false, false);
  ops::scale(d, lora->scale);
  ops::add(merged, d);
}

bool Linear::takes_rounded_dy() const {
  return !(bias && !bias->grad.empty());
}

void Linear::backward(ops::View dx, ops::View dy, ops::View x, ops::View dy16,
                      bool accumulate_dx) const {
  const bool rounded = dy.dtype == DType::kBF16;
  if (rounded && (x.dtype != DType::kBF16 || !takes_rounded_dy()))
    fail("model", "'" + weight->spec.name +
                      "' got a bf16 output gradient, but it needs the fp32 one (an fp32 input or a "
                      "bias gradient); hint: pass dy in f32");
  if (bias && !bias->grad.empty()) ops::bias_backward(bias->grad, dy);
  ops::View g = dy;
  if (x.dtype == DType::kBF16 && !rounded) {
    ops::cast(dy16, dy);
    g = dy16;
  }
  if (!dx.empty()) ops::matmul(dx, g, weight_for(x), false, false, accumulate_dx);
  if (!weight->grad.empty()) ops::matmul(weight->grad, g, x, true, false, true);
  if (lora) lora->backward(dx, dy, g, x);
}

ops::LmHeadStats Linear::cross_entropy(ops::View dx, ops::View logits, ops::View x,
                                       const int64_t* targets, double scale, bool train,
                                       ops::VocabShard shard) const {
  return ops::lm_head_cross_entropy(train ? dx : ops::View{}, train ? weight->grad : ops::View{},
                                    logits, x, weight_for(x), targets, scale, shard);
}

}  // namespace sft::model
