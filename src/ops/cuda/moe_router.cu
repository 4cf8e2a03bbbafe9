// The mixture-of-experts router on CUDA (ops.h's moe_router_forward / backward and
// moe_router_load), f32, with the routing ids in device memory (ops/moe.h): the CPU kernels'
// arithmetic in the same order.
//
// Forward and backward: one thread per token, its E experts walked in order (softmax's max and
// sum in expert order, the top k picked one after another, ties to the lower expert id, the
// renormalisation over the k in slot order), as ops/cpu/moe_router.cpp; the backward's dp is
// built in the dlogits row itself before softmax's backward overwrites it. No sum crosses
// tokens, so nothing depends on the launch shape. expf, not the fast __expf.
// The load: one thread per expert, the tokens walked in order (the CPU's Σ over tokens), the
// counts whole numbers in f32 (exact below 2²⁴, so any order gives the CPU's value). The
// expert ids are the router's own (in [0, E)); padding is device memory (T bytes) or null.
#include <cuda_runtime.h>

#include <string>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr int kThreads = 128;

__global__ void router_forward_kernel(float* probs, float* weights, int64_t* expert_of,
                                      const float* logits, int64_t tokens, int64_t E, int64_t k,
                                      bool normalize) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= tokens) return;
  const float* l = logits + t * E;
  float* p = probs + t * E;
  float m = l[0];
  for (int64_t e = 1; e < E; ++e) m = l[e] > m ? l[e] : m;
  float sum = 0;
  for (int64_t e = 0; e < E; ++e) {
    p[e] = expf(l[e] - m);
    sum += p[e];
  }
  for (int64_t e = 0; e < E; ++e) p[e] = p[e] / sum;
  int64_t* chosen = expert_of + t * k;
  float* w = weights + t * k;
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t e = 0; e < E; ++e) {
      bool taken = false;
      for (int64_t i = 0; i < j; ++i) taken = taken || chosen[i] == e;
      if (taken) continue;
      if (best < 0 || p[e] > p[best]) best = e;
    }
    chosen[j] = best;
    w[j] = p[best];
  }
  if (!normalize) return;
  float s = 0;
  for (int64_t j = 0; j < k; ++j) s += w[j];
  for (int64_t j = 0; j < k; ++j) w[j] = w[j] / s;
}

// dl first holds dp (the extra dprobs plus the top-k weights' share), then softmax's backward.
__global__ void router_backward_kernel(float* dlogits, const float* dweights, const float* dprobs,
                                       const float* probs, const int64_t* expert_of, int64_t tokens,
                                       int64_t E, int64_t k, bool normalize) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= tokens) return;
  const float* p = probs + t * E;
  const int64_t* chosen = expert_of + t * k;
  const float* dw = dweights + t * k;
  float* dl = dlogits + t * E;
  for (int64_t e = 0; e < E; ++e) dl[e] = dprobs ? dprobs[t * E + e] : 0.0f;
  if (normalize) {
    float s = 0, dot = 0;
    for (int64_t j = 0; j < k; ++j) s += p[chosen[j]];
    for (int64_t j = 0; j < k; ++j) dot += dw[j] * (p[chosen[j]] / s);
    for (int64_t j = 0; j < k; ++j) dl[chosen[j]] += (dw[j] - dot) / s;
  } else {
    for (int64_t j = 0; j < k; ++j) dl[chosen[j]] += dw[j];
  }
  float inner = 0;
  for (int64_t e = 0; e < E; ++e) inner += p[e] * dl[e];
  for (int64_t e = 0; e < E; ++e) dl[e] = p[e] * (dl[e] - inner);
}

__global__ void router_load_kernel(float* sums, const float* probs, const int64_t* expert_of,
                                   const uint8_t* padding, int64_t tokens, int64_t E, int64_t k) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= E) return;
  float count = 0, mass = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    if (padding && padding[t]) continue;
    for (int64_t j = 0; j < k; ++j) count += expert_of[t * k + j] == e ? 1.0f : 0.0f;
    mass += probs[t * E + e];
  }
  sums[e] += count;
  sums[E + e] += mass;
}

}  // namespace

void moe_router_forward(View probs, View weights, int64_t* expert_of, View logits, int64_t top_k,
                        bool normalize) {
  const char* op = "moe_router_forward";
  require_cuda(op, {probs, weights, logits});
  const int64_t T = logits.rows, E = logits.cols;
  require(top_k >= 1 && top_k <= E, op, [&] {
    return "top_k " + std::to_string(top_k) + " of " + std::to_string(E) + " experts";
  });
  require(probs.rows == T && probs.cols == E && weights.rows == T && weights.cols == top_k, op,
          [&] {
            return "logits " + shape(logits) + ", probs " + shape(probs) + ", weights " +
                   shape(weights) + " (want (T, E), (T, E), (T, k))";
          });
  require_dtype(op, DType::kF32, {probs, weights, logits});
  if (T == 0) return;
  router_forward_kernel<<<blocks_for(T, kThreads), kThreads>>>(
      probs.as<float>(), weights.as<float>(), expert_of, logits.as<float>(), T, E, top_k,
      normalize);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void moe_router_backward(View dlogits, View dweights, View dprobs, View probs,
                         const int64_t* expert_of, bool normalize) {
  const char* op = "moe_router_backward";
  require_cuda(op, {dlogits, dweights, dprobs, probs});
  const int64_t T = probs.rows, E = probs.cols, k = dweights.cols;
  require(dlogits.rows == T && dlogits.cols == E && dweights.rows == T &&
              (dprobs.empty() || (dprobs.rows == T && dprobs.cols == E)),
          op, [&] {
            return "probs " + shape(probs) + ", dlogits " + shape(dlogits) + ", dweights " +
                   shape(dweights) + ", dprobs " + shape(dprobs);
          });
  require_dtype(op, DType::kF32, {dlogits, dweights, probs});
  if (!dprobs.empty()) require_dtype(op, DType::kF32, {dprobs});
  if (T == 0) return;
  router_backward_kernel<<<blocks_for(T, kThreads), kThreads>>>(
      dlogits.as<float>(), dweights.as<float>(), dprobs.empty() ? nullptr : dprobs.as<float>(),
      probs.as<float>(), expert_of, T, E, k, normalize);
  SFT_CUDA_CHECK(cudaGetLastError());
}

void moe_router_load(View sums, View probs, const int64_t* expert_of, int64_t top_k,
                     const uint8_t* padding) {
  const char* op = "moe_router_load";
  require_cuda(op, {sums, probs});
  const int64_t T = probs.rows, E = probs.cols;
  require(sums.rows == 2 && sums.cols == E && top_k >= 1, op, [&] {
    return "sums " + shape(sums) + ", probs " + shape(probs) + ", top_k " + std::to_string(top_k) +
           " (want (2, E) and (T, E))";
  });
  require_dtype(op, DType::kF32, {sums, probs});
  if (E == 0) return;
  router_load_kernel<<<blocks_for(E, kThreads), kThreads>>>(sums.as<float>(), probs.as<float>(),
                                                            expert_of, padding, T, E, top_k);
  SFT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace sft::ops::cuda
