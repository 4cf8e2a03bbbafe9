// ops::attention_sinks_forward / _backward on the CPU (contract in ops/ops.h).
//
// A sink is a logit per head that joins each query's softmax denominator and carries no value
// (gpt-oss). It needs no change inside the tiled kernels: with lse' = log(e^lse + e^sink), the
// sink-aware output is the plain one times e^(lse − lse'), and the tiled backward, given that
// output and lse', recomputes the sink-aware probabilities P = e^(S − lse') and the right
// Δ = rowsum(dO ⊙ O) = rowsum(P ⊙ dP) (the sink's dP is 0). Only the sink's own gradient,
// −Σ_t p_sink · Δ, is left, and that is this file's backward. One pass over (T, H·D) each way:
// nothing beside the attention it follows. Serial in row order (deterministic and cheap).
#include <cmath>
#include <string>

#include "core/half.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/device_dispatch.h"
#include "ops/ops.h"
#include "ops/profile.h"

namespace sft::ops {

namespace {

template <typename T>
T widen(T x) {
  return x;
}
inline float widen(bf16_bits x) {
  return bf16_to_f32(x);
}

void require_sink_views(const char* op, const View& out, const View& lse, const View& sinks,
                        const View& f) {
  auto bad = [&](const std::string& what) { fail("ops", std::string(op) + ": " + what); };
  const int64_t H = lse.cols;
  if (sinks.numel() != H) bad("sinks must hold one logit per head (" + std::to_string(H) + ")");
  if (out.rows != lse.rows || H == 0 || out.cols % H != 0)
    bad("out (" + std::to_string(out.rows) + ", " + std::to_string(out.cols) +
        ") does not match lse (T, H) = (" + std::to_string(lse.rows) + ", " + std::to_string(H) +
        ")");
  if (lse.dtype != f.dtype || sinks.dtype != f.dtype)
    bad("lse and sinks must be " + std::string(dtype_name(f.dtype)));
  if (!out.dense() || !lse.dense()) bad("takes dense views only");
}

template <typename T, typename Out>
void sinks_forward(Out* out, T* lse, const T* sinks, int64_t rows, int64_t H, int64_t D) {
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t h = 0; h < H; ++h) {
      T& l = lse[t * H + h];
      const T m = std::max(l, sinks[h]);
      const T total = m + std::log(std::exp(l - m) + std::exp(sinks[h] - m));
      const T factor = std::exp(l - total);
      Out* o = out + (t * H + h) * D;
      for (int64_t x = 0; x < D; ++x) o[x] = static_cast<Out>(o[x] * factor);
      l = total;
    }
}

template <typename T, typename Out>
void sinks_backward(T* dsinks, const T* dout, const Out* out, const T* lse, const T* sinks,
                    int64_t rows, int64_t H, int64_t D) {
  for (int64_t h = 0; h < H; ++h) {
    T sum = 0;
    for (int64_t t = 0; t < rows; ++t) {
      const T* g = dout + (t * H + h) * D;
      const Out* o = out + (t * H + h) * D;
      T delta = 0;
      for (int64_t x = 0; x < D; ++x) delta += g[x] * static_cast<T>(widen(o[x]));
      sum += std::exp(sinks[h] - lse[t * H + h]) * delta;
    }
    dsinks[h] -= sum;
  }
}

}  // namespace

void attention_sinks_forward(View out, View lse, View sinks) {
  const ScopedOp op("attention_sinks_forward");
  if (on_cuda("attention_sinks_forward", {out, lse, sinks}))
    return cuda::attention_sinks_forward(out, lse, sinks);
  if (out.dtype != DType::kF32 && out.dtype != DType::kF64)
    fail("ops",
         "attention_sinks_forward: out must be f32 or f64 (a bf16 output is rounded after "
         "the sinks, from attention's f32 output)");
  require_sink_views("attention_sinks_forward", out, lse, sinks, out);
  const int64_t H = lse.cols, D = out.cols / H;
  if (out.dtype == DType::kF64)
    return sinks_forward(out.as<double>(), lse.as<double>(), sinks.as<double>(), out.rows, H, D);
  sinks_forward(out.as<float>(), lse.as<float>(), sinks.as<float>(), out.rows, H, D);
}

void attention_sinks_backward(View dsinks, View dout, View out, View lse, View sinks) {
  const ScopedOp op("attention_sinks_backward");
  if (on_cuda("attention_sinks_backward", {dsinks, dout, out, lse, sinks}))
    return cuda::attention_sinks_backward(dsinks, dout, out, lse, sinks);
  require_sink_views("attention_sinks_backward", out, lse, sinks, dout);
  if (dsinks.numel() != sinks.numel() || dsinks.dtype != dout.dtype || dout.rows != out.rows ||
      dout.cols != out.cols || !dout.dense())
    fail("ops",
         "attention_sinks_backward: dsinks must be (H) and dout (T, H·D), dense, in the "
         "dtype of lse");
  const int64_t H = lse.cols, D = out.cols / H;
  if (dout.dtype == DType::kF64) {
    if (out.dtype != DType::kF64) fail("ops", "attention_sinks_backward: f64 dout needs f64 out");
    return sinks_backward(dsinks.as<double>(), dout.as<double>(), out.as<double>(),
                          lse.as<double>(), sinks.as<double>(), out.rows, H, D);
  }
  if (dout.dtype != DType::kF32) fail("ops", "attention_sinks_backward: dout must be f32 or f64");
  if (out.dtype == DType::kBF16)
    return sinks_backward(dsinks.as<float>(), dout.as<float>(), out.as<uint16_t>(), lse.as<float>(),
                          sinks.as<float>(), out.rows, H, D);
  if (out.dtype != DType::kF32)
    fail("ops", "attention_sinks_backward: out must be f32 or bf16 with an f32 dout");
  sinks_backward(dsinks.as<float>(), dout.as<float>(), out.as<float>(), lse.as<float>(),
                 sinks.as<float>(), out.rows, H, D);
}

}  // namespace sft::ops
