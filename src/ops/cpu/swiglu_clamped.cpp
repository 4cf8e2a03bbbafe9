// gpt-oss's clamped SwiGLU (ops/ops.h: swiglu_clamped_forward / backward), elementwise:
//   g = min(gate, limit), u = clamp(up, −limit, limit), h = (u + 1) · g · σ(alpha · g)
// operation by operation as transformers' GptOssExperts._apply_gate evaluates it in fp32 (the
// sigmoid as 1 / (1 + exp(−x)), no multiply-add contraction), and its backward as autograd
// chains it: dup = dh · g σ(αg), dgate = dh (u + 1) · (σ(αg) + α g σ(αg)(1 − σ(αg))), each zero
// where its clamp cut the input off (torch's clamp keeps the gradient at the limit itself).
// Dtypes as swiglu's: f32, f64 (the reference), or bf16 gate and up (bf16 compute) with f32
// outputs, or bf16 outputs rounded (f32_to_bf16) in the same pass. alpha and limit are taken in
// the computation's type, as torch takes a Python scalar into an fp32 op.
// Signature rule: outputs first, then inputs; activation grads overwrite (=).
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/half.h"
#include "ops/cpu/cpu_ops.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace sft::ops::cpu {

namespace {

// T: the computation's type (float, or double for the reference); In/Out: storage.
template <typename T, typename In>
T load(const In* p, int64_t i) {
  if constexpr (std::is_same_v<In, uint16_t>)
    return bf16_to_f32(p[i]);
  else
    return static_cast<T>(p[i]);
}

template <typename Out, typename T>
void store(Out* p, int64_t i, T v) {
  if constexpr (std::is_same_v<Out, uint16_t>)
    p[i] = f32_to_bf16(static_cast<float>(v));
  else
    p[i] = static_cast<Out>(v);
}

template <typename T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

template <typename T, typename In, typename Out>
void forward_kernel(Out* h, const In* gate, const In* up, int64_t n, T alpha, T limit) {
  parallel_for_rows(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T g = std::min(load<T>(gate, i), limit);
      const T u = std::min(std::max(load<T>(up, i), -limit), limit);
      const T glu = g * sigmoid(g * alpha);
      store(h, i, (u + T(1)) * glu);
    }
  });
}

template <typename T, typename In, typename Out>
void backward_kernel(Out* dgate, Out* dup, const T* dh, const In* gate, const In* up, int64_t n,
                     T alpha, T limit) {
  parallel_for_rows(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T g_in = load<T>(gate, i), u_in = load<T>(up, i);
      const T g = std::min(g_in, limit);
      const T u = std::min(std::max(u_in, -limit), limit);
      const T s = sigmoid(g * alpha);
      const T glu = g * s;
      const T d = dh[i];
      const T du = d * glu;
      const T dglu = d * (u + T(1));
      // glu = g · s(αg): the product's two terms, the sigmoid's (1 − s) s, then the α.
      const T dg = dglu * s + dglu * g * ((T(1) - s) * s) * alpha;
      store(dup, i, u_in >= -limit && u_in <= limit ? du : T(0));
      store(dgate, i, g_in <= limit ? dg : T(0));
    }
  });
}

template <typename What>
void require(bool ok, const char* op, What&& what) {
  if (!ok) fail("ops", std::string(op) + ": " + what());
}

std::string shape(const View& v) {
  return "(" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + ")";
}

void require_dtype(const char* op, const char* role, DType want, std::initializer_list<View> vs) {
  for (const View& v : vs)
    if (v.dtype != want)
      fail("ops", std::string(op) + ": " + role + " must be " + std::string(dtype_name(want)) +
                      ", got " + std::string(dtype_name(v.dtype)));
}

void require_dense(const char* op, std::initializer_list<View> vs) {
  for (const View& v : vs)
    if (!v.dense())
      fail("ops", std::string(op) + ": a column block " + shape(v) + " (the kernel reads dense " +
                      "views)");
}

}  // namespace

void swiglu_clamped_forward(View h, View gate, View up, double alpha, double limit) {
  const char* op = "swiglu_clamped";
  require(h.numel() == gate.numel() && up.numel() == gate.numel(), op,
          [&] { return "gate " + shape(gate) + ", up " + shape(up) + ", h " + shape(h); });
  require(limit > 0, op,
          [&] { return "the limit must be positive, got " + std::to_string(limit); });
  require_dense(op, {h, gate, up});
  const int64_t n = gate.numel();
  const float a32 = static_cast<float>(alpha), l32 = static_cast<float>(limit);
  if (gate.dtype == DType::kBF16) {
    require_dtype(op, "up (with a bf16 gate)", DType::kBF16, {up});
    if (h.dtype == DType::kBF16)
      return forward_kernel<float>(h.as<uint16_t>(), gate.as<uint16_t>(), up.as<uint16_t>(), n, a32,
                                   l32);
    require_dtype(op, "h (with bf16 gate and up)", DType::kF32, {h});
    return forward_kernel<float>(h.as<float>(), gate.as<uint16_t>(), up.as<uint16_t>(), n, a32,
                                 l32);
  }
  if (gate.dtype == DType::kF32) {
    require_dtype(op, "h and up (with an f32 gate)", DType::kF32, {h, up});
    return forward_kernel<float>(h.as<float>(), gate.as<float>(), up.as<float>(), n, a32, l32);
  }
  if (gate.dtype == DType::kF64) {
    require_dtype(op, "h and up (with an f64 gate)", DType::kF64, {h, up});
    return forward_kernel<double>(h.as<double>(), gate.as<double>(), up.as<double>(), n, alpha,
                                  limit);
  }
  fail("ops", std::string(op) + ": no kernel for " + std::string(dtype_name(gate.dtype)));
}

void swiglu_clamped_backward(View dgate, View dup, View dh, View gate, View up, double alpha,
                             double limit) {
  const char* op = "swiglu_clamped_backward";
  require(dh.numel() == gate.numel() && up.numel() == gate.numel() &&
              dgate.numel() == gate.numel() && dup.numel() == gate.numel(),
          op, [&] { return "gate " + shape(gate) + ", up " + shape(up) + ", dh " + shape(dh); });
  require(limit > 0, op,
          [&] { return "the limit must be positive, got " + std::to_string(limit); });
  require_dense(op, {dgate, dup, dh, gate, up});
  const int64_t n = gate.numel();
  const float a32 = static_cast<float>(alpha), l32 = static_cast<float>(limit);
  if (gate.dtype == DType::kBF16) {
    require_dtype(op, "up (with a bf16 gate)", DType::kBF16, {up});
    require_dtype(op, "dh", DType::kF32, {dh});
    if (dgate.dtype == DType::kBF16) {
      require_dtype(op, "dup (with a bf16 dgate)", DType::kBF16, {dup});
      return backward_kernel<float>(dgate.as<uint16_t>(), dup.as<uint16_t>(), dh.as<float>(),
                                    gate.as<uint16_t>(), up.as<uint16_t>(), n, a32, l32);
    }
    require_dtype(op, "dgate and dup (with bf16 gate and up)", DType::kF32, {dgate, dup});
    return backward_kernel<float>(dgate.as<float>(), dup.as<float>(), dh.as<float>(),
                                  gate.as<uint16_t>(), up.as<uint16_t>(), n, a32, l32);
  }
  if (gate.dtype == DType::kF32) {
    require_dtype(op, "dgate, dup, dh and up (with an f32 gate)", DType::kF32,
                  {dgate, dup, dh, up});
    return backward_kernel<float>(dgate.as<float>(), dup.as<float>(), dh.as<float>(),
                                  gate.as<float>(), up.as<float>(), n, a32, l32);
  }
  if (gate.dtype == DType::kF64) {
    require_dtype(op, "dgate, dup, dh and up (with an f64 gate)", DType::kF64,
                  {dgate, dup, dh, up});
    return backward_kernel<double>(dgate.as<double>(), dup.as<double>(), dh.as<double>(),
                                   gate.as<double>(), up.as<double>(), n, alpha, limit);
  }
  fail("ops", std::string(op) + ": no kernel for " + std::string(dtype_name(gate.dtype)));
}

}  // namespace sft::ops::cpu
