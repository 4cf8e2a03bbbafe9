// Attention test layouts shared by the fp32 and bf16 flash-attention tests: segments over
// packed documents (training) and over a KV cache (decoding).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/attention.h"

namespace sft::ops::testing {

struct Case {
  std::vector<AttentionSegment> segs;
  AttentionDims dims;
  int64_t Tq = 0, Tk = 0;
};

// Training layout: documents back to back, queries and keys the same rows, q_offset 0.
inline Case packed(const std::vector<int64_t>& lengths, int64_t H, int64_t Hkv, int64_t D,
                   int64_t window) {
  Case c;
  c.dims = {H, Hkv, D, window};
  for (int64_t n : lengths) {
    c.segs.push_back({c.Tq, n, c.Tq, n, 0});
    c.Tq += n;
  }
  c.Tk = c.Tq;
  return c;
}

// Decode layout: `fresh` new tokens against cached + new keys.
inline Case decode(int64_t cached, int64_t fresh, int64_t H, int64_t Hkv, int64_t D,
                   int64_t window) {
  Case c;
  c.dims = {H, Hkv, D, window};
  c.segs.push_back({0, fresh, 0, cached + fresh, cached});
  c.Tq = fresh;
  c.Tk = cached + fresh;
  return c;
}

// The case with a set score scale (0 = 1/sqrt(D)) and soft-cap (0 = none).
inline Case with_score_map(Case c, double scale, double softcap) {
  c.dims.scale = scale;
  c.dims.softcap = softcap;
  return c;
}

}  // namespace sft::ops::testing
