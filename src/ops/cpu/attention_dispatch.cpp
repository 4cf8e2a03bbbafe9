// ops::attention_* on the CPU: per segment, the eager reference kernel (attention_reference.h).
// The backward recomputes the probabilities of each segment instead of saving (H, n, n).
#include <algorithm>
#include <string>
#include <vector>

#include "ops/cpu/attention_reference.h"
#include "ops/ops.h"
#include "ops/profile.h"

namespace sft::ops {

namespace {

template <typename T>
std::vector<T>& scratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf;
}

cpu::AttentionShape reference_shape(const AttentionSegment& s, const AttentionDims& d) {
  return {s.q_len, s.k_len, s.q_offset, d.H, d.Hkv, d.D, d.window};
}

template <typename T>
void forward(T* out, const T* q, const T* k, const T* v, std::span<const AttentionSegment> segs,
             const AttentionDims& d) {
  for (const AttentionSegment& s : segs) {
    std::vector<T>& probs = scratch<T>(static_cast<size_t>(d.H * s.q_len * s.k_len));
    cpu::attention_forward(out + s.q_begin * d.H * d.D, probs.data(), q + s.q_begin * d.H * d.D,
                           k + s.k_begin * d.Hkv * d.D, v + s.k_begin * d.Hkv * d.D,
                           reference_shape(s, d));
  }
}

template <typename T>
void backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
              std::span<const AttentionSegment> segs, const AttentionDims& d) {
  for (const AttentionSegment& s : segs) {
    const size_t np = static_cast<size_t>(d.H * s.q_len * s.k_len);
    std::vector<T>& buf = scratch<T>(np + static_cast<size_t>(s.q_len * (s.k_len + d.H * d.D)));
    T* probs = buf.data();
    T* work = probs + np;
    T* out = work + s.q_len * s.k_len;
    const T* qs = q + s.q_begin * d.H * d.D;
    const T* ks = k + s.k_begin * d.Hkv * d.D;
    const T* vs = v + s.k_begin * d.Hkv * d.D;
    cpu::attention_forward(out, probs, qs, ks, vs, reference_shape(s, d));
    cpu::attention_backward(dq + s.q_begin * d.H * d.D, dk + s.k_begin * d.Hkv * d.D,
                            dv + s.k_begin * d.Hkv * d.D, work, dout + s.q_begin * d.H * d.D, probs,
                            qs, ks, vs, reference_shape(s, d));
  }
}

}  // namespace

void attention_forward(View out, View /*lse*/, View q, View k, View v,
                       std::span<const AttentionSegment> segments, const AttentionDims& dims) {
  const ScopedOp op("attention_forward");
  if (q.dtype == DType::kF64)
    return forward(out.as<double>(), q.as<double>(), k.as<double>(), v.as<double>(), segments,
                   dims);
  forward(out.as<float>(), q.as<float>(), k.as<float>(), v.as<float>(), segments, dims);
}

void attention_backward(View dq, View dk, View dv, View dout, View /*out*/, View /*lse*/, View q,
                        View k, View v, std::span<const AttentionSegment> segments,
                        const AttentionDims& dims) {
  const ScopedOp op("attention_backward");
  if (q.dtype == DType::kF64)
    return backward(dq.as<double>(), dk.as<double>(), dv.as<double>(), dout.as<double>(),
                    q.as<double>(), k.as<double>(), v.as<double>(), segments, dims);
  backward(dq.as<float>(), dk.as<float>(), dv.as<float>(), dout.as<float>(), q.as<float>(),
           k.as<float>(), v.as<float>(), segments, dims);
}

}  // namespace sft::ops
