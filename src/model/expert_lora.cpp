// LoRA on stacked expert weights: materialised W + delta and its gradient. See expert_lora.h.
#include "model/expert_lora.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "ops/ops.h"

namespace sft::model {

namespace {

// A dense (rows, cols) view at the start of `arena`, grown to fit (then reused by every layer).
ops::View grown(Arena& arena, DType dtype, int64_t rows, int64_t cols) {
  arena.reserve(std::max<size_t>(1, static_cast<size_t>(rows * cols) * dtype_size(dtype)));
  return ops::View{arena.data(), dtype, rows, cols, arena.device()};
}

}  // namespace

ops::View ExpertLoraAdapter::identity() {
  const int64_t E = experts;
  ExpertLoraScratch& s = *scratch;
  const ops::View eye = grown(s.eye, DType::kF32, E, E);
  if (s.eye_size != E) {
    std::vector<float> host(static_cast<size_t>(E * E), 0.0f);
    for (int64_t i = 0; i < E; ++i) host[static_cast<size_t>(i * E + i)] = 1.0f;
    copy_bytes(eye.data, eye.device, host.data(), Device::kCpu, host.size() * sizeof(float));
    s.eye_size = E;
  }
  return eye;
}

ops::View ExpertLoraAdapter::expert_part(ops::View rows, int64_t e, int64_t p) const {
  return rows.row_range(e, 1).reshaped(out() / parts, parts * r).columns(p * r, r);
}

ops::View ExpertLoraAdapter::materialize(DType compute) {
  if (base->value.empty())
    fail("lora", "LoRA on '" + base->spec.name +
                     "' needs its fp32 values (W + delta is formed in fp32, as PEFT does), and "
                     "they were released (hint: train the experts' adapters without the bf16 "
                     "frozen-base saving, or file an issue)");
  const int64_t E = experts, O = out(), I = in(), P = parts;
  ExpertLoraScratch& s = *scratch;
  const ops::View w = grown(s.w, DType::kF32, E * O, I);
  ops::cast(w, base->value.reshaped(E * O, I));
  // scale · Mᵀ, M = B as (out·r, E): row e is scale · B_e (out, r), dense.
  const ops::View bt = grown(s.bt, DType::kF32, E, O * r);
  ops::matmul(bt, identity(), b->value.reshaped(O * r, E), false, true, false);
  ops::scale(bt, scale);
  const int64_t rows = O / P;
  for (int64_t e = 0; e < E; ++e)
    for (int64_t p = 0; p < P; ++p)
      ops::matmul(w.row_range(e * O + p * rows, rows), expert_part(bt, e, p),
                  a->value.row_range(e * r, r), false, false, true);
  if (compute != DType::kBF16) return w;
  const ops::View w16 = grown(s.w16, DType::kBF16, E * O, I);
  ops::cast(w16, w);
  return w16;
}

ops::View ExpertLoraAdapter::zeroed_weight_grad() {
  const ops::View dw = grown(scratch->dw, DType::kF32, experts * out(), in());
  ops::zero(dw);
  return dw;
}

void ExpertLoraAdapter::backward() {
  const int64_t E = experts, O = out(), I = in(), P = parts, rows = O / P;
  ExpertLoraScratch& s = *scratch;
  const ops::View dw = ops::View{s.dw.data(), DType::kF32, E * O, I, s.dw.device()};
  const ops::View bt = ops::View{s.bt.data(), DType::kF32, E, O * r, s.bt.device()};
  const ops::View dbt = grown(s.dbt, DType::kF32, E, O * r);
  for (int64_t e = 0; e < E; ++e) {
    const ops::View a_e = a->value.row_range(e * r, r);
    for (int64_t p = 0; p < P; ++p) {
      const ops::View dw_ep = dw.row_range(e * O + p * rows, rows);
      // dA_e += (scale · B_e,p)ᵀ dW'_e,p; dB_e,p = dW'_e,p A_eᵀ (scaled below, all at once).
      ops::matmul(a->grad.row_range(e * r, r), expert_part(bt, e, p), dw_ep, true, false, true);
      ops::matmul(expert_part(dbt, e, p), dw_ep, a_e, false, true, false);
    }
  }
  ops::scale(dbt, scale);
  // dM += dBtᵀ: B's expert-minor columns from the dense rows.
  ops::matmul(b->grad.reshaped(O * r, E), dbt, identity(), true, false, true);
}

ops::View ExpertStack::weights(DType compute) const {
  if (lora) return lora->materialize(compute);
  if (compute != DType::kBF16) return base->value;
  if (base->bf16.empty())
    fail("model", "bf16 input to '" + base->spec.name + "', which has no bf16 copy");
  return base->bf16;
}

ops::View ExpertStack::weight_grad() const {
  return lora ? lora->zeroed_weight_grad() : base->grad;
}

void ExpertStack::finish_weight_grad() const {
  if (lora) lora->backward();
}

}  // namespace sft::model
