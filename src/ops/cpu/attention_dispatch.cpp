// ops::attention_* on views, on the CPU: the tiled kernels of ops/attention.h, with one
// workspace that grows to the largest call and is reused (the step loop does not allocate).
#include "ops/attention.h"

#include "ops/device_dispatch.h"
#include "ops/ops.h"
#include "ops/profile.h"

namespace sft::ops {

namespace {

AttentionWorkspace& workspace() {
  static AttentionWorkspace ws;
  return ws;
}

// (The device was checked by require_cpu_kernel.)
void require_same_dtype(const char* op, const View& q, std::initializer_list<View> views) {
  for (const View& v : views) {
    if (!v.empty() && v.dtype != q.dtype)
      fail("ops", std::string(op) + ": views of mixed dtypes (" + std::string(dtype_name(q.dtype)) +
                      ", " + std::string(dtype_name(v.dtype)) + ")");
  }
}

// The views' shapes against the dims and the segments' rows.
void require_shapes(const char* op, const View& q, const View& k, const View& v,
                    std::initializer_list<std::pair<const View*, const View*>> same,
                    const View& lse, std::span<const AttentionSegment> segments,
                    const AttentionDims& d) {
  auto bad = [&](const std::string& what) { fail("ops", std::string(op) + ": " + what); };
  if (q.cols != d.H * d.D)
    bad("q has " + std::to_string(q.cols) + " columns, H·D is " + std::to_string(d.H * d.D));
  if (k.cols != d.Hkv * d.D || v.cols != d.Hkv * d.D || v.rows != k.rows)
    bad("k, v must be (Tk, Hkv·D = " + std::to_string(d.Hkv * d.D) + ")");
  if (lse.rows != q.rows || lse.cols != d.H)
    bad("lse must be (Tq = " + std::to_string(q.rows) + ", H = " + std::to_string(d.H) + ")");
  for (const auto& [a, b] : same)
    if (a->rows != b->rows || a->cols != b->cols) bad("an output's shape differs from its input's");
  for (const AttentionSegment& s : segments)
    if (s.q_begin < 0 || s.k_begin < 0 || s.q_begin + s.q_len > q.rows ||
        s.k_begin + s.k_len > k.rows)
      bad("a segment reaches past the rows of q (" + std::to_string(q.rows) + ") or k (" +
          std::to_string(k.rows) + ")");
}

}  // namespace

void attention_forward(View out, View lse, View q, View k, View v,
                       std::span<const AttentionSegment> segments, const AttentionDims& dims) {
  const ScopedOp op("attention_forward");
  require_cpu_kernel("attention_forward", {out, lse, q, k, v});
  require_same_dtype("attention_forward", q, {out, lse, k, v});
  require_shapes("attention_forward", q, k, v, {{&out, &q}}, lse, segments, dims);
  if (q.dtype == DType::kF64)
    return attention_forward(out.as<double>(), lse.as<double>(), q.as<double>(), k.as<double>(),
                             v.as<double>(), segments, dims, workspace());
  attention_forward(out.as<float>(), lse.as<float>(), q.as<float>(), k.as<float>(), v.as<float>(),
                    segments, dims, workspace());
}

void attention_backward(View dq, View dk, View dv, View dout, View out, View lse, View q, View k,
                        View v, std::span<const AttentionSegment> segments,
                        const AttentionDims& dims) {
  const ScopedOp op("attention_backward");
  require_cpu_kernel("attention_backward", {dq, dk, dv, dout, out, lse, q, k, v});
  require_same_dtype("attention_backward", q, {dq, dk, dv, dout, out, lse, k, v});
  require_shapes("attention_backward", q, k, v,
                 {{&dq, &q}, {&dout, &q}, {&out, &q}, {&dk, &k}, {&dv, &v}}, lse, segments, dims);
  if (q.dtype == DType::kF64)
    return attention_backward(dq.as<double>(), dk.as<double>(), dv.as<double>(), dout.as<double>(),
                              out.as<double>(), lse.as<double>(), q.as<double>(), k.as<double>(),
                              v.as<double>(), segments, dims, workspace());
  attention_backward(dq.as<float>(), dk.as<float>(), dv.as<float>(), dout.as<float>(),
                     out.as<float>(), lse.as<float>(), q.as<float>(), k.as<float>(), v.as<float>(),
                     segments, dims, workspace());
}

}  // namespace sft::ops
