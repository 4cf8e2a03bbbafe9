// The host side of the CUDA tiled attention (attention.cuh): the call's checks, the work items
// and their upload into the backend's scratch.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <string>

#include "ops/cpu/flash_attention_tiles.h"
#include "ops/cuda/attention.cuh"
#include "ops/cuda/cuda_memory.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda::attention {

Kind check_call(const char* op, const View& out, const View& lse, const View& q, const View& k,
                const View& v, std::span<const AttentionSegment> segments, const AttentionDims& d,
                bool backward, std::initializer_list<std::pair<const View*, const View*>> same,
                std::initializer_list<View> f32_views) {
  require_cuda(op, {out, lse, q, k, v});
  require_cuda(op, f32_views);
  Kind kind = Kind::kF32;
  if (q.dtype == DType::kBF16) {
    require(k.dtype == DType::kBF16 && v.dtype == DType::kBF16 &&
                (out.dtype == DType::kBF16 || out.dtype == DType::kF32),
            op, [&] {
              return "with bf16 q, k and v must be bf16 and out bf16 or f32 (got k " +
                     std::string(dtype_name(k.dtype)) + ", v " + std::string(dtype_name(v.dtype)) +
                     ", out " + std::string(dtype_name(out.dtype)) +
                     "); legal: q, k, v bf16, out bf16 or f32, lse (and dout, dq, dk, dv) f32";
            });
    kind = out.dtype == DType::kBF16 ? Kind::kBf16OutBf16 : Kind::kBf16OutF32;
  } else {
    require(q.dtype == DType::kF32, op, [&] {
      return "the CUDA kernel takes f32 or bf16 attention, got " +
             std::string(dtype_name(q.dtype)) + " (f64 is the CPU reference)";
    });
    require_dtype(op, DType::kF32, {out, k, v});
  }
  require_dtype(op, DType::kF32, f32_views);
  require(q.cols == d.H * d.D, op, [&] {
    return "q has " + std::to_string(q.cols) + " columns, H·D is " + std::to_string(d.H * d.D);
  });
  require(k.cols == d.Hkv * d.D && v.cols == d.Hkv * d.D && v.rows == k.rows, op, [&] {
    return "k, v must be (Tk, Hkv·D = " + std::to_string(d.Hkv * d.D) + "), got k " + shape(k) +
           ", v " + shape(v);
  });
  require(lse.rows == q.rows && lse.cols == d.H, op, [&] {
    return "lse must be (Tq = " + std::to_string(q.rows) + ", H = " + std::to_string(d.H) + ")";
  });
  require(out.rows == q.rows && out.cols == q.cols, op,
          [&] { return "out " + shape(out) + " differs from q " + shape(q); });
  for (const auto& pair : same) {
    const View &a = *pair.first, &b = *pair.second;
    require(a.rows == b.rows && a.cols == b.cols, op, [&] {
      return "a gradient's shape " + shape(a) + " differs from its input's " + shape(b);
    });
  }
  for (const AttentionSegment& s : segments)
    require(s.q_begin + s.q_len <= q.rows && s.k_begin + s.k_len <= k.rows, op, [&] {
      return "a segment reaches past the rows of q (" + std::to_string(q.rows) + ") or k (" +
             std::to_string(k.rows) + ")";
    });
  flash::check_segments(segments, d, backward);
  require(d.D <= kMaxHeadDim, op, [&] {
    return "head dim " + std::to_string(d.D) + " is above the CUDA kernels' " +
           std::to_string(kMaxHeadDim);
  });
  return kind;
}

Params params_of(const AttentionDims& d) {
  Params p;
  p.H = d.H;
  p.Hkv = d.Hkv;
  p.D = d.D;
  p.window = d.window;
  p.group = d.H / d.Hkv;
  // As the CPU's flash::score_scale<float>: exactly 1/sqrt(D) in fp32 by default.
  p.scale = d.scale > 0 ? static_cast<float>(d.scale) : 1.0f / std::sqrt(static_cast<float>(d.D));
  p.cap = static_cast<float>(d.softcap);
  return p;
}

std::vector<WorkItem> tiles_of(std::span<const AttentionSegment> segments, int rows, bool by_keys) {
  std::vector<WorkItem> items;
  for (size_t i = 0; i < segments.size(); ++i) {
    const int64_t n = by_keys ? segments[i].k_len : segments[i].q_len;
    for (int64_t start = 0; start < n; start += rows)
      items.push_back({static_cast<int64_t>(i), start});
  }
  return items;
}

Uploaded upload_plan(std::span<const AttentionSegment> segments,
                     std::initializer_list<const std::vector<WorkItem>*> items, int64_t floats) {
  auto line = [](size_t n) { return (n + 255) / 256 * 256; };
  std::vector<size_t> offsets;
  size_t bytes = line(segments.size_bytes());
  for (const std::vector<WorkItem>* list : items) {
    offsets.push_back(bytes);
    bytes += line(list->size() * sizeof(WorkItem));
  }
  const size_t float_offset = bytes;
  const size_t host_bytes = bytes;
  bytes += static_cast<size_t>(floats) * sizeof(float);
  std::vector<std::byte> host(host_bytes);
  std::memcpy(host.data(), segments.data(), segments.size_bytes());
  size_t i = 0;
  for (const std::vector<WorkItem>* list : items)
    std::memcpy(host.data() + offsets[i++], list->data(), list->size() * sizeof(WorkItem));
  auto* base = static_cast<std::byte*>(scratch(bytes));
  copy_to_device(base, host.data(), host_bytes);  // synchronous: after the kernels before it
  Uploaded u;
  u.segments = reinterpret_cast<const AttentionSegment*>(base);
  for (size_t j = 0; j < offsets.size() && j < 2; ++j)
    u.items[j] = reinterpret_cast<const WorkItem*>(base + offsets[j]);
  u.floats = reinterpret_cast<float*>(base + float_offset);
  return u;
}

}  // namespace sft::ops::cuda::attention
