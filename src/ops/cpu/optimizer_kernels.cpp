// The optimizer's elementwise kernels on the CPU: AdamW's update (16 lanes at a time on AVX-512,
// the same bits as the scalar loop), the squared L2 norm, scaling.
// The CPU slots of these ops in the kernel table (ops/cpu/cpu_ops.h).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/half.h"
#include "ops/cpu/bf16_simd.h"
#include "ops/cpu/cpu_features.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/ops.h"

// torch's CPU kernels do not fuse multiply-adds here; fusing would change the last bits.
// (GCC in ISO C++ mode does not contract by default; clang does within a statement.)
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace sft::ops::cpu {

namespace {

void require_cpu_f32(const char* op, std::initializer_list<View> views, int64_t n) {
  for (const View& v : views) {
    if (v.device != Device::kCpu || v.dtype != DType::kF32 || v.numel() != n)
      fail("ops", std::string(op) + ": needs CPU f32 views of " + std::to_string(n) +
                      " elements, got a " + std::string(dtype_name(v.dtype)) + " " +
                      device_name(v.device) + " view of " + std::to_string(v.numel()));
  }
}

// Fixed-size blocks (not thread chunks) so the summation order never depends on the pool size.
constexpr int64_t kNormBlock = 1 << 14;

// AdamW's element update on [b, e), torch's operations in torch's order (no fused multiply-adds:
// the pragma above). The generic path; the AVX-512 one below computes the same bits.
void adamw_scalar(float* p, const float* g, float* m, float* v, uint16_t* copy, int64_t b,
                  int64_t e, const AdamWScalars& k) {
  for (int64_t i = b; i < e; ++i) {
    float pi = p[i];
    const float gi = g[i] * k.grad_scale;
    if (k.decay) pi = pi * k.decay_factor;
    // torch.lerp with weight < 0.5: start + weight * (end - start)
    m[i] = m[i] + k.lerp_weight * (gi - m[i]);
    v[i] = v[i] * k.beta2;
    v[i] = v[i] + k.one_minus_beta2 * gi * gi;
    const float denom = std::sqrt(v[i]) / k.bc2_sqrt + k.eps;
    p[i] = pi + k.neg_step_size * m[i] / denom;
    if (copy) copy[i] = f32_to_bf16(p[i]);
  }
}

// The same update 16 lanes at a time: every operation is the scalar one (IEEE-exact sqrt and
// division, separate multiplies and adds), and the bf16 copy is bf16_simd.h's f32_to_bf16.
// Why by hand: the compiler leaves the scalar loop unvectorised (the five arrays may alias), and
// that loop is bound by its sqrt and divisions, not by memory: 15 GB/s against the 37–43 GB/s
// that scale and add reach here; this one reaches 42 (64 M parameters, 2 threads).
[[gnu::target(SFT_AVX512_TARGET)]] void adamw_avx512(float* p, const float* g, float* m, float* v,
                                                     uint16_t* copy, int64_t b, int64_t e,
                                                     const AdamWScalars& k) {
  const __m512 decay = _mm512_set1_ps(k.decay_factor), lerp = _mm512_set1_ps(k.lerp_weight),
               beta2 = _mm512_set1_ps(k.beta2), one_minus_beta2 = _mm512_set1_ps(k.one_minus_beta2),
               bc2_sqrt = _mm512_set1_ps(k.bc2_sqrt), eps = _mm512_set1_ps(k.eps),
               neg_step = _mm512_set1_ps(k.neg_step_size),
               grad_scale = _mm512_set1_ps(k.grad_scale);
  int64_t i = b;
  for (; i + 16 <= e; i += 16) {
    __m512 pi = _mm512_loadu_ps(p + i);
    const __m512 gi = _mm512_mul_ps(_mm512_loadu_ps(g + i), grad_scale);
    if (k.decay) pi = _mm512_mul_ps(pi, decay);
    __m512 mi = _mm512_loadu_ps(m + i);
    mi = _mm512_add_ps(mi, _mm512_mul_ps(lerp, _mm512_sub_ps(gi, mi)));
    __m512 vi = _mm512_mul_ps(_mm512_loadu_ps(v + i), beta2);
    vi = _mm512_add_ps(vi, _mm512_mul_ps(_mm512_mul_ps(one_minus_beta2, gi), gi));
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), bc2_sqrt), eps);
    pi = _mm512_add_ps(pi, _mm512_div_ps(_mm512_mul_ps(neg_step, mi), denom));
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    _mm512_storeu_ps(p + i, pi);
    if (copy) cpu::bf16_store16(copy + i, pi);
  }
  adamw_scalar(p, g, m, v, copy, i, e, k);
}

// AdamW's five arrays, checked: four CPU f32 views of n elements and an optional bf16 copy.
struct AdamWArrays {
  float* p;
  const float* g;
  float* m;
  float* v;
  uint16_t* copy;  // null without a bf16 copy
};
AdamWArrays adamw_arrays(const char* op, View param, View grad, View exp_avg, View exp_avg_sq,
                         View bf16_copy) {
  const int64_t n = param.numel();
  require_cpu_f32(op, {param, grad, exp_avg, exp_avg_sq}, n);
  if (!bf16_copy.empty() && (bf16_copy.dtype != DType::kBF16 || bf16_copy.numel() != n ||
                             bf16_copy.device != Device::kCpu))
    fail("ops", std::string(op) + ": the bf16 copy must be a CPU bf16 view of " +
                    std::to_string(n) + " elements");
  return {param.as<float>(), grad.as<float>(), exp_avg.as<float>(), exp_avg_sq.as<float>(),
          bf16_copy.empty() ? nullptr : bf16_copy.as<uint16_t>()};
}

// Elements [b, e) on the fastest path this CPU has (both give the same bits).
void adamw_range(const AdamWArrays& a, int64_t b, int64_t e, const AdamWScalars& k) {
  if (cpu::use_avx512()) return adamw_avx512(a.p, a.g, a.m, a.v, a.copy, b, e, k);
  adamw_scalar(a.p, a.g, a.m, a.v, a.copy, b, e, k);
}

}  // namespace

void adamw_update(View param, View grad, View exp_avg, View exp_avg_sq, const AdamWScalars& k,
                  View bf16_copy) {
  const AdamWArrays a = adamw_arrays("adamw_update", param, grad, exp_avg, exp_avg_sq, bf16_copy);
  parallel_for_rows(param.numel(), 1 << 14, [&](int64_t b, int64_t e) { adamw_range(a, b, e, k); });
}

void adamw_update_slices(View param, View grad, View exp_avg, View exp_avg_sq,
                         std::span<const ParamSlice> slices, const AdamWScalars& k,
                         View bf16_copy) {
  const AdamWArrays a =
      adamw_arrays("adamw_update_slices", param, grad, exp_avg, exp_avg_sq, bf16_copy);
  const int64_t n = param.numel();
  // starts[s]: where slice s begins in the concatenation of all slices (the split's index).
  // Kept per calling thread: a training step allocates nothing once its buffers have grown
  // (tests/model/step_allocations_test.cpp). The workers below read the caller's copy through
  // this reference (a worker's own `kept` would be another, empty vector).
  thread_local std::vector<int64_t> kept;
  std::vector<int64_t>& starts = kept;
  starts.assign(slices.size() + 1, 0);
  for (size_t s = 0; s < slices.size(); ++s) {
    const ParamSlice& slice = slices[s];
    if (slice.offset > static_cast<size_t>(n) || slice.size > static_cast<size_t>(n) - slice.offset)
      fail("ops", "adamw_update_slices: slice " + std::to_string(s) + " [" +
                      std::to_string(slice.offset) + ", +" + std::to_string(slice.size) +
                      ") runs past the " + std::to_string(n) + " elements of the views");
    starts[s + 1] = starts[s] + static_cast<int64_t>(slice.size);
  }
  // Each chunk of the concatenation updates the parts of the slices it covers, each part with
  // the per-element code of adamw_update: the chunking changes no bit.
  parallel_for_rows(starts.back(), 1 << 14, [&](int64_t b, int64_t e) {
    size_t s =
        static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), b) - starts.begin()) - 1;
    for (; s < slices.size() && starts[s] < e; ++s) {
      AdamWScalars ks = k;
      ks.decay = k.decay && slices[s].decay;
      const int64_t base = static_cast<int64_t>(slices[s].offset) - starts[s];
      const int64_t lo = std::max(b, starts[s]) + base, hi = std::min(e, starts[s + 1]) + base;
      adamw_range(a, lo, hi, ks);
    }
  });
}

namespace {

// Σ a² over one block in 8 double lanes combined in a fixed order (vectorises; the order is
// the same for every thread count and ISA).
[[gnu::always_inline]] inline double block_sum_of_squares(const float* a, int64_t n) {
  double lane[8] = {};
  const int64_t body = n / 8 * 8;
  for (int64_t i = 0; i < body; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] += static_cast<double>(a[i + l]) * a[i + l];
  for (int64_t i = body; i < n; ++i) lane[i - body] += static_cast<double>(a[i]) * a[i];
  double sum = 0;
  for (double v : lane) sum += v;
  return sum;
}

double block_generic(const float* a, int64_t n) {
  return block_sum_of_squares(a, n);
}

[[gnu::target("avx512f,avx512dq,avx512bw,avx512vl")]] double block_avx512(const float* a,
                                                                          int64_t n) {
  return block_sum_of_squares(a, n);
}

}  // namespace

double sum_of_squares(View x) {
  const int64_t n = x.numel();
  require_cpu_f32("sum_of_squares", {x}, n);
  const float* a = x.as<float>();
  const int64_t blocks = (n + kNormBlock - 1) / kNormBlock;
  // Blocks go through in batches whose partial sums fit a stack array (no scratch to own); the
  // total adds them in block order, as one pass over every block would.
  constexpr int64_t kBatch = 512;
  double partial[kBatch];
  const bool avx512 = cpu::use_avx512();
  double total = 0.0;
  for (int64_t first = 0; first < blocks; first += kBatch) {
    const int64_t count = std::min(kBatch, blocks - first);
    parallel_for_rows(count, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t begin = (first + b) * kNormBlock,
                      len = std::min(n, begin + kNormBlock) - begin;
        partial[b] = avx512 ? block_avx512(a + begin, len) : block_generic(a + begin, len);
      }
    });
    for (int64_t b = 0; b < count; ++b) total += partial[b];
  }
  return total;
}

void scale(View x, float factor) {
  require_cpu_f32("scale", {x}, x.numel());
  float* a = x.as<float>();
  parallel_for_rows(x.numel(), 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) a[i] *= factor;
  });
}

void add_scalar(View x, float c) {
  require_cpu_f32("add_scalar", {x}, x.numel());
  float* a = x.as<float>();
  parallel_for_rows(x.numel(), 1 << 15, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) a[i] += c;
  });
}

}  // namespace sft::ops::cpu
