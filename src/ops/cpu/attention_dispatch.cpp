// ops::attention_* on views, on the CPU: the tiled kernels of ops/attention.h with the default
// tiles, on the caller's workspace (sized by attention_workspace_bytes).
// Legal dtypes: every view f32, or every view f64 (the reference), or bf16 attention: q, k, v
// bf16, lse f32, out bf16 or f32 and, backward, dout, dq, dk, dv f32. Other mixes are refused.
#include "ops/attention.h"

#include "ops/cuda/cuda_ops.h"
#include "ops/device_dispatch.h"
#include "ops/ops.h"
#include "ops/profile.h"

namespace sft::ops {

namespace {

// (The device was checked by on_cuda: CPU views here.)
void require_same_dtype(const char* op, const View& q, std::initializer_list<View> views) {
  for (const View& v : views) {
    if (!v.empty() && v.dtype != q.dtype)
      fail("ops", std::string(op) + ": views of mixed dtypes (" + std::string(dtype_name(q.dtype)) +
                      ", " + std::string(dtype_name(v.dtype)) + ")");
  }
}

// bf16 attention: q is bf16; `bf16` must be too, `out` bf16 or f32, `f32` f32.
void require_bf16_mix(const char* op, std::initializer_list<View> bf16, const View& out,
                      std::initializer_list<View> f32) {
  auto bad = [&](const View& v, const char* want) {
    fail("ops", std::string(op) + ": with bf16 q, " + want + " (got " +
                    std::string(dtype_name(v.dtype)) +
                    "); legal: q, k, v bf16, out bf16 or f32, lse (and dout, dq, dk, dv) f32");
  };
  for (const View& v : bf16)
    if (v.dtype != DType::kBF16) bad(v, "k and v must be bf16");
  if (out.dtype != DType::kBF16 && out.dtype != DType::kF32) bad(out, "out must be bf16 or f32");
  for (const View& v : f32)
    if (v.dtype != DType::kF32) bad(v, "lse, dout, dq, dk, dv must be f32");
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
                       std::span<const AttentionSegment> segments, const AttentionDims& dims,
                       Workspace memory) {
  const ScopedOp op("attention_forward");
  AttentionWorkspace ws;
  ws.memory = memory;
  if (on_cuda("attention_forward", {out, lse, q, k, v}))
    return cuda::attention_forward(out, lse, q, k, v, segments, dims, memory);
  if (q.dtype == DType::kBF16) {
    require_bf16_mix("attention_forward", {k, v}, out, {lse});
    require_shapes("attention_forward", q, k, v, {{&out, &q}}, lse, segments, dims);
    if (out.dtype == DType::kBF16)
      return attention_forward_bf16(out.as<uint16_t>(), lse.as<float>(), q.as<uint16_t>(),
                                    k.as<uint16_t>(), v.as<uint16_t>(), segments, dims, ws);
    return attention_forward_bf16(out.as<float>(), lse.as<float>(), q.as<uint16_t>(),
                                  k.as<uint16_t>(), v.as<uint16_t>(), segments, dims, ws);
  }
  require_same_dtype("attention_forward", q, {out, lse, k, v});
  require_shapes("attention_forward", q, k, v, {{&out, &q}}, lse, segments, dims);
  if (q.dtype == DType::kF64)
    return attention_forward(out.as<double>(), lse.as<double>(), q.as<double>(), k.as<double>(),
                             v.as<double>(), segments, dims, ws);
  attention_forward(out.as<float>(), lse.as<float>(), q.as<float>(), k.as<float>(), v.as<float>(),
                    segments, dims, ws);
}

void attention_backward(View dq, View dk, View dv, View dout, View out, View lse, View q, View k,
                        View v, std::span<const AttentionSegment> segments,
                        const AttentionDims& dims, Workspace memory) {
  const ScopedOp op("attention_backward");
  AttentionWorkspace ws;
  ws.memory = memory;
  if (on_cuda("attention_backward", {dq, dk, dv, dout, out, lse, q, k, v}))
    return cuda::attention_backward(dq, dk, dv, dout, out, lse, q, k, v, segments, dims, memory);
  if (q.dtype == DType::kBF16) {
    require_bf16_mix("attention_backward", {k, v}, out, {lse, dout, dq, dk, dv});
    require_shapes("attention_backward", q, k, v,
                   {{&dq, &q}, {&dout, &q}, {&out, &q}, {&dk, &k}, {&dv, &v}}, lse, segments, dims);
    if (out.dtype == DType::kBF16)
      return attention_backward_bf16(dq.as<float>(), dk.as<float>(), dv.as<float>(),
                                     dout.as<float>(), out.as<uint16_t>(), lse.as<float>(),
                                     q.as<uint16_t>(), k.as<uint16_t>(), v.as<uint16_t>(), segments,
                                     dims, ws);
    return attention_backward_bf16(dq.as<float>(), dk.as<float>(), dv.as<float>(), dout.as<float>(),
                                   out.as<float>(), lse.as<float>(), q.as<uint16_t>(),
                                   k.as<uint16_t>(), v.as<uint16_t>(), segments, dims, ws);
  }
  require_same_dtype("attention_backward", q, {dq, dk, dv, dout, out, lse, k, v});
  require_shapes("attention_backward", q, k, v,
                 {{&dq, &q}, {&dout, &q}, {&out, &q}, {&dk, &k}, {&dv, &v}}, lse, segments, dims);
  if (q.dtype == DType::kF64)
    return attention_backward(dq.as<double>(), dk.as<double>(), dv.as<double>(), dout.as<double>(),
                              out.as<double>(), lse.as<double>(), q.as<double>(), k.as<double>(),
                              v.as<double>(), segments, dims, ws);
  attention_backward(dq.as<float>(), dk.as<float>(), dv.as<float>(), dout.as<float>(),
                     out.as<float>(), lse.as<float>(), q.as<float>(), k.as<float>(), v.as<float>(),
                     segments, dims, ws);
}

}  // namespace sft::ops
