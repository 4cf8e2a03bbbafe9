// Mixture-of-experts row movement (ops/ops.h: moe_permute_*, moe_combine_*): the tokens
// gathered into the experts' permuted rows, and the experts' outputs combined back per token.
//
// Every kernel writes each output row once, from a fixed order of reads (ops/moe.h's arrays):
// the permutation's backward is a gather per token over its k rows, not a scatter, and the
// combine sums a token's k slots in ascending expert order (transformers' index_add_ walks the
// experts in order onto a zero output). So the results are bit-identical for any thread count.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/half.h"
#include "ops/cpu/cpu_ops.h"

namespace sft::ops::cpu {

namespace {

std::string shape(const View& v) {
  return "(" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + ")";
}

void require(bool ok, const char* op, const std::string& what) {
  if (!ok) fail("ops", std::string(op) + ": " + what);
}

void require_float(const char* op, const View& first, std::initializer_list<View> views) {
  require(first.dtype == DType::kF32 || first.dtype == DType::kF64, op,
          "no kernel for " + std::string(dtype_name(first.dtype)));
  for (const View& v : views)
    require(v.dtype == first.dtype, op,
            "views of mixed dtypes (" + std::string(dtype_name(first.dtype)) + " and " +
                std::string(dtype_name(v.dtype)) + ")");
}

// A token's slots in ascending permuted row (= ascending expert) order; k ≤ kMaxTopK.
constexpr int64_t kMaxTopK = 64;
std::array<int64_t, kMaxTopK> slots_by_row(const ExpertRouting& r, int64_t t) {
  std::array<int64_t, kMaxTopK> s{};
  for (int64_t j = 0; j < r.top_k; ++j) s[static_cast<size_t>(j)] = j;
  const int64_t* rows = r.row_of + t * r.top_k;
  std::sort(s.begin(), s.begin() + r.top_k,
            [&](int64_t a, int64_t b) { return rows[a] < rows[b]; });
  return s;
}

void check_routing(const char* op, const ExpertRouting& r, int64_t T) {
  require(r.tokens == T && r.top_k >= 1 && r.top_k <= kMaxTopK, op,
          "a routing of " + std::to_string(r.tokens) + " tokens × top_k " +
              std::to_string(r.top_k) + " for " + std::to_string(T) + " token rows (top_k ≤ " +
              std::to_string(kMaxTopK) + ")");
}

template <typename T>
void combine_forward(T* out, const T* ys, const T* w, const ExpertRouting& r, int64_t C) {
  parallel_for_rows(r.tokens, 8, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const auto slots = slots_by_row(r, t);
      T* o = out + t * C;
      std::fill(o, o + C, T(0));
      for (int64_t n = 0; n < r.top_k; ++n) {
        const int64_t j = slots[static_cast<size_t>(n)];
        const T wj = w[t * r.top_k + j];
        const T* y = ys + r.row_of[t * r.top_k + j] * C;
        for (int64_t c = 0; c < C; ++c) o[c] += y[c] * wj;
      }
    }
  });
}

template <typename T>
void combine_backward(T* dys, T* dw, const T* dout, const T* ys, const T* w, const ExpertRouting& r,
                      int64_t C) {
  parallel_for_rows(r.tokens, 8, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const T* d = dout + t * C;
      for (int64_t j = 0; j < r.top_k; ++j) {
        const int64_t row = r.row_of[t * r.top_k + j];
        const T wj = w[t * r.top_k + j];
        const T* y = ys + row * C;
        T* dy = dys + row * C;
        T dot = 0;
        for (int64_t c = 0; c < C; ++c) {
          dy[c] = d[c] * wj;
          dot += d[c] * y[c];
        }
        dw[t * r.top_k + j] = dot;
      }
    }
  });
}

template <typename T>
void permute_backward(T* dx, const T* dxs, const ExpertRouting& r, int64_t C) {
  parallel_for_rows(r.tokens, 8, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const auto slots = slots_by_row(r, t);
      T* o = dx + t * C;
      std::fill(o, o + C, T(0));
      for (int64_t n = 0; n < r.top_k; ++n) {
        const T* g = dxs + r.row_of[t * r.top_k + slots[static_cast<size_t>(n)]] * C;
        for (int64_t c = 0; c < C; ++c) o[c] += g[c];
      }
    }
  });
}

}  // namespace

void moe_permute_forward(View xs, View x, const ExpertRouting& r) {
  check_routing("moe_permute_forward", r, x.rows);
  require(xs.rows == r.rows() && xs.cols == x.cols && xs.dtype == x.dtype, "moe_permute_forward",
          "xs " + shape(xs) + " " + std::string(dtype_name(xs.dtype)) + " for x " + shape(x) + " " +
              std::string(dtype_name(x.dtype)) + " (want (T·k, C), x's dtype)");
  require(x.dtype == DType::kF32 || x.dtype == DType::kF64 || x.dtype == DType::kBF16,
          "moe_permute_forward", "no kernel for " + std::string(dtype_name(x.dtype)));
  const size_t row = static_cast<size_t>(x.cols) * dtype_size(x.dtype);
  const char* src = static_cast<const char*>(x.data);
  char* dst = static_cast<char*>(xs.data);
  parallel_for_rows(xs.rows, 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      std::memcpy(dst + static_cast<size_t>(i) * row,
                  src + static_cast<size_t>(r.token_of[i]) * row, row);
  });
}

void moe_permute_backward(View dx, View dxs, const ExpertRouting& r) {
  check_routing("moe_permute_backward", r, dx.rows);
  require(dxs.rows == r.rows() && dxs.cols == dx.cols, "moe_permute_backward",
          "dxs " + shape(dxs) + " for dx " + shape(dx));
  require_float("moe_permute_backward", dx, {dxs});
  if (dx.dtype == DType::kF32) return permute_backward(dx.as<float>(), dxs.as<float>(), r, dx.cols);
  permute_backward(dx.as<double>(), dxs.as<double>(), r, dx.cols);
}

void moe_combine_forward(View out, View ys, View weights, const ExpertRouting& r) {
  check_routing("moe_combine_forward", r, out.rows);
  require(ys.rows == r.rows() && ys.cols == out.cols && weights.rows == out.rows &&
              weights.cols == r.top_k,
          "moe_combine_forward",
          "out " + shape(out) + ", ys " + shape(ys) + ", weights " + shape(weights));
  require_float("moe_combine_forward", out, {ys, weights});
  if (out.dtype == DType::kF32)
    return combine_forward(out.as<float>(), ys.as<float>(), weights.as<float>(), r, out.cols);
  combine_forward(out.as<double>(), ys.as<double>(), weights.as<double>(), r, out.cols);
}

void moe_combine_backward(View dys, View dweights, View dout, View ys, View weights,
                          const ExpertRouting& r) {
  check_routing("moe_combine_backward", r, dout.rows);
  require(ys.rows == r.rows() && ys.cols == dout.cols && dys.rows == ys.rows &&
              dys.cols == ys.cols && weights.rows == dout.rows && weights.cols == r.top_k &&
              dweights.rows == weights.rows && dweights.cols == weights.cols,
          "moe_combine_backward",
          "dout " + shape(dout) + ", ys " + shape(ys) + ", dys " + shape(dys) + ", weights " +
              shape(weights) + ", dweights " + shape(dweights));
  require_float("moe_combine_backward", dout, {dys, dweights, ys, weights});
  if (dout.dtype == DType::kF32)
    return combine_backward(dys.as<float>(), dweights.as<float>(), dout.as<float>(), ys.as<float>(),
                            weights.as<float>(), r, dout.cols);
  combine_backward(dys.as<double>(), dweights.as<double>(), dout.as<double>(), ys.as<double>(),
                   weights.as<double>(), r, dout.cols);
}

}  // namespace sft::ops::cpu
