// ops::attention_* on views, on the CPU: the tiled kernels of ops/attention.h, with one
// workspace that grows to the largest call and is reused (the step loop does not allocate).
#include "ops/attention.h"

#include "ops/ops.h"
#include "ops/profile.h"

namespace sft::ops {

namespace {

AttentionWorkspace& workspace() {
  static AttentionWorkspace ws;
  return ws;
}

void require_cpu_float(const char* op, const View& q, std::initializer_list<View> views) {
  for (const View& v : views) {
    if (!v.empty() && v.device != Device::kCpu)
      fail("ops",
           std::string(op) + ": a " + device_name(v.device) + " view reached the CPU kernels");
    if (!v.empty() && v.dtype != q.dtype)
      fail("ops", std::string(op) + ": views of mixed dtypes (" + std::string(dtype_name(q.dtype)) +
                      ", " + std::string(dtype_name(v.dtype)) + ")");
  }
}

}  // namespace

void attention_forward(View out, View lse, View q, View k, View v,
                       std::span<const AttentionSegment> segments, const AttentionDims& dims) {
  const ScopedOp op("attention_forward");
  require_cpu_float("attention_forward", q, {out, lse, k, v});
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
  require_cpu_float("attention_backward", q, {dq, dk, dv, dout, out, lse, k, v});
  if (q.dtype == DType::kF64)
    return attention_backward(dq.as<double>(), dk.as<double>(), dv.as<double>(), dout.as<double>(),
                              out.as<double>(), lse.as<double>(), q.as<double>(), k.as<double>(),
                              v.as<double>(), segments, dims, workspace());
  attention_backward(dq.as<float>(), dk.as<float>(), dv.as<float>(), dout.as<float>(),
                     out.as<float>(), lse.as<float>(), q.as<float>(), k.as<float>(), v.as<float>(),
                     segments, dims, workspace());
}

}  // namespace sft::ops
