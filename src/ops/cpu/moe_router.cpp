// Mixture-of-experts router kernels (ops/ops.h: moe_sort_tokens, moe_router_forward/backward).
//
// Forward per token, as transformers' routers compute it in fp32: p = softmax(logits) (exp of
// logit − max over the sum, the sum in expert order), the top_k largest p in descending order
// (ties to the lower expert id, a fixed rule where torch.topk leaves it open), and their
// weights, renormalised w_j = p_j / Σ_i p_i with norm_topk_prob.
// Backward: with renormalisation dp_j = (dw_j − Σ_i dw_i w_i) / s (s = Σ_i p_i), else dp_j =
// dw_j, scattered onto the chosen experts and added to the extra dprobs; then softmax's
// dlogit_e = p_e (dp_e − Σ_f p_f dp_f). Each token is its own work item (parallel over tokens,
// no reduction across them), so the result is the same for any thread count.
// The sort: a counting sort over expert ids, stable in (t, j) order, serial (T·k integers).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace sft::ops {

void moe_sort_tokens(int64_t* offsets, int64_t* row_of, int64_t* token_of, const int64_t* expert_of,
                     int64_t tokens, int64_t top_k, int64_t experts) {
  const int64_t R = tokens * top_k;
  std::fill(offsets, offsets + experts + 1, int64_t{0});
  for (int64_t i = 0; i < R; ++i) {
    const int64_t e = expert_of[i];
    if (e < 0 || e >= experts)
      fail("ops", "moe_sort_tokens: token " + std::to_string(i / top_k) + " slot " +
                      std::to_string(i % top_k) + " names expert " + std::to_string(e) + " of " +
                      std::to_string(experts));
    ++offsets[e + 1];
  }
  for (int64_t e = 0; e < experts; ++e) offsets[e + 1] += offsets[e];
  // next[e]: the next free row of expert e, walked in (t, j) order: a stable sort.
  std::vector<int64_t> next(offsets, offsets + experts);
  for (int64_t i = 0; i < R; ++i) {
    const int64_t r = next[static_cast<size_t>(expert_of[i])]++;
    row_of[i] = r;
    token_of[r] = i / top_k;
  }
}

namespace cpu {

namespace {

std::string shape(const View& v) {
  return "(" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + ")";
}

template <typename T>
void router_forward(T* probs, T* weights, int64_t* expert_of, const T* logits, int64_t tokens,
                    int64_t E, int64_t k, bool normalize) {
  parallel_for_rows(tokens, 16, [&](int64_t b, int64_t e_) {
    for (int64_t t = b; t < e_; ++t) {
      const T* l = logits + t * E;
      T* p = probs + t * E;
      T m = l[0];
      for (int64_t e = 1; e < E; ++e) m = std::max(m, l[e]);
      T sum = 0;
      for (int64_t e = 0; e < E; ++e) {
        p[e] = std::exp(l[e] - m);
        sum += p[e];
      }
      for (int64_t e = 0; e < E; ++e) p[e] = p[e] / sum;
      int64_t* chosen = expert_of + t * k;
      T* w = weights + t * k;
      for (int64_t j = 0; j < k; ++j) {
        int64_t best = -1;
        for (int64_t e = 0; e < E; ++e) {
          if (std::find(chosen, chosen + j, e) != chosen + j) continue;
          if (best < 0 || p[e] > p[best]) best = e;
        }
        chosen[j] = best;
        w[j] = p[best];
      }
      if (normalize) {
        T s = 0;
        for (int64_t j = 0; j < k; ++j) s += w[j];
        for (int64_t j = 0; j < k; ++j) w[j] = w[j] / s;
      }
    }
  });
}

template <typename T>
void router_backward(T* dlogits, const T* dweights, const T* dprobs, const T* probs,
                     const int64_t* expert_of, int64_t tokens, int64_t E, int64_t k,
                     bool normalize) {
  parallel_for_rows(tokens, 16, [&](int64_t b, int64_t e_) {
    std::vector<T> dp(static_cast<size_t>(E));
    for (int64_t t = b; t < e_; ++t) {
      const T* p = probs + t * E;
      const int64_t* chosen = expert_of + t * k;
      const T* dw = dweights + t * k;
      for (int64_t e = 0; e < E; ++e) dp[static_cast<size_t>(e)] = dprobs ? dprobs[t * E + e] : 0;
      if (normalize) {
        T s = 0, dot = 0;
        for (int64_t j = 0; j < k; ++j) s += p[chosen[j]];
        for (int64_t j = 0; j < k; ++j) dot += dw[j] * (p[chosen[j]] / s);
        for (int64_t j = 0; j < k; ++j) dp[static_cast<size_t>(chosen[j])] += (dw[j] - dot) / s;
      } else {
        for (int64_t j = 0; j < k; ++j) dp[static_cast<size_t>(chosen[j])] += dw[j];
      }
      T inner = 0;
      for (int64_t e = 0; e < E; ++e) inner += p[e] * dp[static_cast<size_t>(e)];
      for (int64_t e = 0; e < E; ++e)
        dlogits[t * E + e] = p[e] * (dp[static_cast<size_t>(e)] - inner);
    }
  });
}

void require_same_float(const char* op, const View& first, std::initializer_list<View> views) {
  if (first.dtype != DType::kF32 && first.dtype != DType::kF64)
    fail("ops", std::string(op) + ": no kernel for " + std::string(dtype_name(first.dtype)) +
                    " (the router runs in f32, f64 for the reference)");
  for (const View& v : views)
    if (!v.empty() && v.dtype != first.dtype)
      fail("ops", std::string(op) + ": views of mixed dtypes (" +
                      std::string(dtype_name(first.dtype)) + " and " +
                      std::string(dtype_name(v.dtype)) + ")");
}

}  // namespace

void moe_router_forward(View probs, View weights, int64_t* expert_of, View logits, int64_t top_k,
                        bool normalize) {
  const int64_t T = logits.rows, E = logits.cols;
  if (top_k < 1 || top_k > E)
    fail("ops", "moe_router_forward: top_k " + std::to_string(top_k) + " of " + std::to_string(E) +
                    " experts");
  if (probs.rows != T || probs.cols != E || weights.rows != T || weights.cols != top_k)
    fail("ops", "moe_router_forward: logits " + shape(logits) + ", probs " + shape(probs) +
                    ", weights " + shape(weights) + " (want (T, E), (T, E), (T, k))");
  require_same_float("moe_router_forward", logits, {probs, weights});
  if (logits.dtype == DType::kF32)
    return router_forward(probs.as<float>(), weights.as<float>(), expert_of, logits.as<float>(), T,
                          E, top_k, normalize);
  router_forward(probs.as<double>(), weights.as<double>(), expert_of, logits.as<double>(), T, E,
                 top_k, normalize);
}

void moe_router_backward(View dlogits, View dweights, View dprobs, View probs,
                         const int64_t* expert_of, bool normalize) {
  const int64_t T = probs.rows, E = probs.cols, k = dweights.cols;
  if (dlogits.rows != T || dlogits.cols != E || dweights.rows != T ||
      (!dprobs.empty() && (dprobs.rows != T || dprobs.cols != E)))
    fail("ops", "moe_router_backward: probs " + shape(probs) + ", dlogits " + shape(dlogits) +
                    ", dweights " + shape(dweights) + ", dprobs " + shape(dprobs));
  require_same_float("moe_router_backward", probs, {dlogits, dweights, dprobs});
  if (probs.dtype == DType::kF32)
    return router_backward(dlogits.as<float>(), dweights.as<float>(),
                           dprobs.empty() ? nullptr : dprobs.as<float>(), probs.as<float>(),
                           expert_of, T, E, k, normalize);
  router_backward(dlogits.as<double>(), dweights.as<double>(),
                  dprobs.empty() ? nullptr : dprobs.as<double>(), probs.as<double>(), expert_of, T,
                  E, k, normalize);
}

void moe_router_load(View sums, View probs, const int64_t* expert_of, int64_t top_k,
                     const uint8_t* padding) {
  const int64_t T = probs.rows, E = probs.cols;
  if (sums.rows != 2 || sums.cols != E || sums.dtype != DType::kF32 || probs.dtype != DType::kF32)
    fail("ops", "moe_router_load: sums " + shape(sums) + " " + std::string(dtype_name(sums.dtype)) +
                    ", probs " + shape(probs) + " " + std::string(dtype_name(probs.dtype)) +
                    " (want f32 (2, E) and (T, E))");
  float* counts = sums.as<float>();
  float* mass = counts + E;
  const float* p = probs.as<float>();
  for (int64_t t = 0; t < T; ++t) {
    if (padding && padding[t]) continue;
    for (int64_t j = 0; j < top_k; ++j) {
      const int64_t e = expert_of[t * top_k + j];
      if (e < 0 || e >= E)
        fail("ops", "moe_router_load: token " + std::to_string(t) + " names expert " +
                        std::to_string(e) + " of " + std::to_string(E));
      counts[e] += 1.0f;
    }
  }
  // Σ over tokens per expert, tokens in order (torch's sum(dim=0) in fp32).
  for (int64_t e = 0; e < E; ++e) {
    float s = 0;
    for (int64_t t = 0; t < T; ++t)
      if (!padding || !padding[t]) s += p[t * E + e];
    mass[e] += s;
  }
}

}  // namespace cpu
}  // namespace sft::ops
