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

// A 4-bit base sums LoRA's products in its own (ops::LowRankTerm: y written once, not read
// and rewritten by a rank-r product) where nothing comes between the two: no output sum (the
// adapter's term is added once, after a row-parallel sum) and no bias (added before it).
bool Linear::folds_lora() const {
  return lora && weight->is_4bit() && !sum_output && !bias;
}

bool Linear::writes_rounded_output() const {
  return weight->is_4bit() && !sum_output && !bias;
}

void Linear::forward(ops::View y, ops::View x) const {
  if (y.dtype == DType::kBF16 && !writes_rounded_output())
    fail("model", "'" + weight->spec.name +
                      "' got a bf16 output, but only a 4-bit base without bias or output sum "
                      "rounds its own product; hint: pass y in f32 and cast it");
  const bool fold = folds_lora();
  if (weight->is_4bit())
    ops::matmul_4bit(y, x, weight->quant4, true, false,
                     fold ? lora->forward_term(x) : ops::LowRankTerm{});
  else
    ops::matmul(y, x, weight_for(x), false, true, false);
  if (sum_output) sum_output->sum({y.as<float>(), static_cast<size_t>(y.numel())});
  if (bias) ops::add_bias(y, bias->value);
  if (lora && !fold) lora->forward(y, x);
}

void Linear::merged_weight(ops::View merged) const {
  if (weight->is_4bit())
    fail("model", "'" + weight->spec.name +
                      "' is a 4-bit base: merging an adapter into it is not implemented yet");
  std::memcpy(merged.data, weight->value.data, static_cast<size_t>(merged.numel()) * sizeof(float));
  if (!lora) return;
  // Δ = (B A) · scale, in that order, as PEFT's get_delta_weight.
  std::vector<float> delta(static_cast<size_t>(merged.numel()));
  const ops::View d = ops::view_of(delta.data(), merged.rows, merged.cols);
  ops::matmul(d, lora->b_part(lora->b->value), lora->a->value, false, false, false);
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
  if (folds_lora()) {  // the adapter's grads first; its dx term summed in the base's product
    const ops::LowRankTerm t = lora->backward_params(dy, g, x);
    if (dx.empty()) return;
    const bool fold = lora->input_grad_is_a_product();
    ops::matmul_4bit(dx, g, weight->quant4, false, accumulate_dx, fold ? t : ops::LowRankTerm{});
    if (!fold) lora->add_input_grad(dx, t, x);
    return;
  }
  if (weight->is_4bit()) {  // frozen: the input gradient only
    if (!dx.empty()) ops::matmul_4bit(dx, g, weight->quant4, false, accumulate_dx);
  } else {
    if (!dx.empty()) ops::matmul(dx, g, weight_for(x), false, false, accumulate_dx);
    if (!weight->grad.empty()) ops::matmul(weight->grad, g, x, true, false, true);
  }
  if (lora) lora->backward(dx, dy, g, x);
}

namespace {

// `next` starts where `prev` ends (both dense, of one dtype and width), or both are empty.
bool follows(const ops::View& prev, const ops::View& next) {
  if (prev.empty() || next.empty()) return prev.empty() && next.empty();
  const auto* end = static_cast<const char*>(prev.data) + prev.numel() * dtype_size(prev.dtype);
  return next.data == end && next.dtype == prev.dtype && next.cols == prev.cols && prev.dense() &&
         next.dense();
}

// `first` grown by `rows` rows (kept empty when it is empty).
ops::View grown(ops::View first, int64_t rows) {
  if (!first.empty()) first.rows += rows;
  return first;
}

}  // namespace

std::optional<StackedLinear> StackedLinear::of(std::initializer_list<const Linear*> parts) {
  if (parts.size() == 0) return std::nullopt;
  const Parameter* prev = nullptr;
  int64_t extra_rows = 0;
  for (const Linear* part : parts) {
    if (part->bias || part->lora || part->sum_output || part->weight->is_4bit())
      return std::nullopt;
    const Parameter* p = part->weight;
    if (prev && !(follows(prev->value, p->value) && follows(prev->grad, p->grad) &&
                  follows(prev->bf16, p->bf16)))
      return std::nullopt;
    if (prev) extra_rows += p->value.rows;
    prev = p;
  }
  const Parameter* head = (*parts.begin())->weight;
  return StackedLinear{grown(head->value, extra_rows), grown(head->grad, extra_rows),
                       grown(head->bf16, extra_rows)};
}

ops::View StackedLinear::weight_for(const ops::View& x) const {
  if (x.dtype != DType::kBF16) return value;
  if (bf16.empty())
    fail("model", "bf16 input to a stacked projection whose weights have no bf16 copy");
  return bf16;
}

void StackedLinear::forward(ops::View y, ops::View x) const {
  ops::matmul(y, x, weight_for(x), false, true, false);
}

void StackedLinear::backward(ops::View dx, ops::View dy, ops::View x, bool accumulate_dx) const {
  if (!dx.empty()) ops::matmul(dx, dy, weight_for(x), false, false, accumulate_dx);
  if (!grad.empty()) ops::matmul(grad, dy, x, true, false, true);
}

ops::LmHeadStats Linear::cross_entropy(ops::View dx, ops::View logits, ops::View x,
                                       const int64_t* targets, double scale, bool train,
                                       ops::Workspace workspace, ops::VocabShard shard,
                                       double softcap) const {
  if (weight->is_4bit())  // transformers keeps the LM head unquantized, so no kernel takes one
    fail("model", "'" + weight->spec.name + "' is 4-bit; the LM head must stay unquantized");
  return ops::lm_head_cross_entropy(train ? dx : ops::View{}, train ? weight->grad : ops::View{},
                                    logits, x, weight_for(x), targets, scale, workspace, shard,
                                    softcap);
}

}  // namespace sft::model
