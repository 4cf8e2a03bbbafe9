// Embedding forward/backward, whole tables and vocabulary shards. See embedding.h.
#include "ops/cpu/embedding.h"

#include <algorithm>
#include <cstring>

#include "core/half.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

template <typename T>
void embedding_forward(T* out, const int64_t* ids, const T* wte, int64_t Tn, int64_t C) {
  for (int64_t t = 0; t < Tn; ++t)
    std::memcpy(out + t * C, wte + ids[t] * C, static_cast<size_t>(C) * sizeof(T));
}

template <typename T>
void embedding_backward(T* dwte, const T* dout, const int64_t* ids, int64_t Tn, int64_t C) {
  // Parallel over features, serial over tokens: repeated ids add in token order.
  parallel_for_rows(C, 64, [&](int64_t b, int64_t e) {
    for (int64_t t = 0; t < Tn; ++t) {
      T* row = dwte + ids[t] * C;
      const T* g = dout + t * C;
      for (int64_t j = b; j < e; ++j) row[j] += g[j];
    }
  });
}

template <typename T>
void embedding_forward_shard(T* out, const int64_t* ids, const T* wte, int64_t Tn, int64_t C,
                             int64_t begin, int64_t rows) {
  for (int64_t t = 0; t < Tn; ++t) {
    const int64_t local = ids[t] - begin;
    if (local >= 0 && local < rows)
      std::memcpy(out + t * C, wte + local * C, static_cast<size_t>(C) * sizeof(T));
    else
      std::fill(out + t * C, out + (t + 1) * C, T(-0.0));
  }
}

template <typename T>
void embedding_backward_shard(T* dwte, const T* dout, const int64_t* ids, int64_t Tn, int64_t C,
                              int64_t begin, int64_t rows) {
  // As embedding_backward: parallel over features, serial over tokens.
  parallel_for_rows(C, 64, [&](int64_t b, int64_t e) {
    for (int64_t t = 0; t < Tn; ++t) {
      const int64_t local = ids[t] - begin;
      if (local < 0 || local >= rows) continue;
      T* row = dwte + local * C;
      const T* g = dout + t * C;
      for (int64_t j = b; j < e; ++j) row[j] += g[j];
    }
  });
}

namespace {

void widen_row(float* out, const uint16_t* row, int64_t C) {
  for (int64_t j = 0; j < C; ++j) out[j] = bf16_to_f32(row[j]);
}

}  // namespace

void embedding_forward_bf16(float* out, const int64_t* ids, const uint16_t* wte, int64_t Tn,
                            int64_t C) {
  for (int64_t t = 0; t < Tn; ++t) widen_row(out + t * C, wte + ids[t] * C, C);
}

void embedding_forward_shard_bf16(float* out, const int64_t* ids, const uint16_t* wte, int64_t Tn,
                                  int64_t C, int64_t begin, int64_t rows) {
  for (int64_t t = 0; t < Tn; ++t) {
    const int64_t local = ids[t] - begin;
    if (local >= 0 && local < rows)
      widen_row(out + t * C, wte + local * C, C);
    else
      std::fill(out + t * C, out + (t + 1) * C, -0.0f);
  }
}

template void embedding_forward<float>(float*, const int64_t*, const float*, int64_t, int64_t);
template void embedding_forward<double>(double*, const int64_t*, const double*, int64_t, int64_t);
template void embedding_backward<float>(float*, const float*, const int64_t*, int64_t, int64_t);
template void embedding_backward<double>(double*, const double*, const int64_t*, int64_t, int64_t);
template void embedding_forward_shard<float>(float*, const int64_t*, const float*, int64_t, int64_t,
                                             int64_t, int64_t);
template void embedding_forward_shard<double>(double*, const int64_t*, const double*, int64_t,
                                              int64_t, int64_t, int64_t);
template void embedding_backward_shard<float>(float*, const float*, const int64_t*, int64_t,
                                              int64_t, int64_t, int64_t);
template void embedding_backward_shard<double>(double*, const double*, const int64_t*, int64_t,
                                               int64_t, int64_t, int64_t);

}  // namespace sft::ops::cpu
