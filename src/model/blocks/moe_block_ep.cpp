// MoeMlpBlock under expert parallelism (model/expert_parallel.h): this rank's permuted rows go
// to their experts' owners and come back computed. The owner's rows for backward (xs, gate,
// up, h) live in the layer's arena of the ExpertParallel, carved by the same layout in forward
// and backward (the received row count is the layer's plan, so backward finds them where
// forward put them); the staging and f32 buffers in its shared scratch, one pass at a time.
#include "core/arena.h"
#include "model/blocks/layer_shape.h"
#include "model/blocks/moe_block.h"

namespace sft::model {

namespace {

// At least one row, so that a rank receiving none still has views to pass (of zero rows).
int64_t at_least_one(int64_t n) {
  return n > 0 ? n : 1;
}

MoeMlpBlock::ExpertRows carve_rows(Carver& cv, int64_t N, int64_t C, int64_t I, DType compute) {
  const int64_t n = at_least_one(N);
  MoeMlpBlock::ExpertRows x;
  x.xs = take_view(cv, compute, n, C);
  x.gate = take_view(cv, compute, n, I);
  x.up = take_view(cv, compute, n, I);
  x.h = take_view(cv, compute, n, I);
  return x;
}

MoeMlpBlock::ExpertRows first_rows(const MoeMlpBlock::ExpertRows& x, int64_t N) {
  return {x.xs.first(N, x.xs.cols), x.gate.first(N, x.gate.cols), x.up.first(N, x.up.cols),
          x.h.first(N, x.h.cols)};
}

}  // namespace

void MoeMlpBlock::exchange_forward(Saved& a) const {
  ExpertParallel::Layer& L = ep->layers[static_cast<size_t>(layer)];
  L.exchange.plan(*ep->group, a.host_offsets(), ep->first_expert, ep->end_expert);
  const int64_t N = L.exchange.received_rows(), n = at_least_one(N), C = a.xs.cols;
  const DType compute = a.xs.dtype;
  ExpertRows x;
  carve(L.rows, [&](Carver& cv) { x = carve_rows(cv, N, C, I, compute); });
  ExpertScratch s;
  ops::View staging, staging32, ys;
  carve(ep->scratch, [&](Carver& cv) {
    staging = take_view(cv, compute, n, C);
    staging32 = take_f32(cv, n, C);
    ys = take_f32(cv, n, C);
    if (compute == DType::kBF16) {
      s.gate32 = take_f32(cv, n, I);
      s.up32 = take_f32(cv, n, I);
    }
  });
  x = first_rows(x, N);
  L.exchange.to_owners(*ep->group, x.xs, a.xs, staging.first(N, C));
  experts_forward(ys.first(N, C), x, s, L.exchange.routing(), L.exchange.offsets());
  L.exchange.to_sources(*ep->group, a.ys, ys.first(N, C), staging32.first(N, C));
}

void MoeMlpBlock::exchange_backward(const Scratch& g, const Saved& a) const {
  ExpertParallel::Layer& L = ep->layers[static_cast<size_t>(layer)];
  const int64_t N = L.exchange.received_rows(), n = at_least_one(N), C = a.xs.cols;
  const DType compute = a.xs.dtype;
  ExpertRows x;  // forward's rows: the same layout over the same arena, so the same places
  carve(L.rows, [&](Carver& cv) { x = carve_rows(cv, N, C, I, compute); });
  ExpertScratch s;
  ops::View staging, dys, dxs;
  carve(ep->scratch, [&](Carver& cv) {
    staging = take_f32(cv, n, C);
    dys = take_f32(cv, n, C);
    dxs = take_f32(cv, n, C);
    s.dh = take_f32(cv, n, I);
    s.dgate = take_f32(cv, n, I);
    s.dup = take_f32(cv, n, I);
    if (compute == DType::kBF16) {
      s.dys16 = take_view(cv, DType::kBF16, n, C);
      s.dgate16 = take_view(cv, DType::kBF16, n, I);
      s.dup16 = take_view(cv, DType::kBF16, n, I);
    }
  });
  // The buffers were carved for at least one row; the experts see exactly N.
  auto rows = [N](ops::View v) { return v.empty() ? v : v.first(N, v.cols); };
  for (ops::View* v : {&s.dh, &s.dgate, &s.dup, &s.dys16, &s.dgate16, &s.dup16}) *v = rows(*v);
  L.exchange.to_owners(*ep->group, rows(dys), g.dys, rows(staging));
  experts_backward(rows(dxs), rows(dys), s, first_rows(x, N), L.exchange.routing(),
                   L.exchange.offsets());
  L.exchange.to_sources(*ep->group, g.dxs, rows(dxs), rows(staging));
}

}  // namespace sft::model
