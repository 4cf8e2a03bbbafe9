// The tiled attention's segment checks, thread count and workspace sizes
// (see flash_attention_tiles.h).
#include <limits>
#include <string>

#include "ops/cpu/flash_attention_tiles.h"

namespace sft::ops {

namespace flash {

namespace {

std::string describe(size_t index, const AttentionSegment& s) {
  return "segment " + std::to_string(index) + " {q_begin " + std::to_string(s.q_begin) +
         ", q_len " + std::to_string(s.q_len) + ", k_begin " + std::to_string(s.k_begin) +
         ", k_len " + std::to_string(s.k_len) + ", q_offset " + std::to_string(s.q_offset) + "}";
}

bool overlap(int64_t a, int64_t a_len, int64_t b, int64_t b_len) {
  return a_len > 0 && b_len > 0 && a < b + b_len && b < a + a_len;
}

}  // namespace

Extent check_segments(std::span<const AttentionSegment> segments, const AttentionDims& dims,
                      bool backward) {
  if (dims.H <= 0 || dims.Hkv <= 0 || dims.D <= 0 || dims.H % dims.Hkv != 0 || dims.window < 0)
    fail("attention", "bad dims H " + std::to_string(dims.H) + ", Hkv " + std::to_string(dims.Hkv) +
                          ", D " + std::to_string(dims.D) + ", window " +
                          std::to_string(dims.window) + "; H must be a positive multiple of Hkv");
  Extent e;
  for (size_t i = 0; i < segments.size(); ++i) {
    const AttentionSegment& s = segments[i];
    if (s.q_begin < 0 || s.q_len < 0 || s.k_begin < 0 || s.k_len < 0 || s.q_offset < 0)
      fail("attention", describe(i, s) + " has a negative field");
    if (s.q_len > 0 && s.q_offset + s.q_len > s.k_len)
      fail("attention", describe(i, s) +
                            ": the last query sits past the last key; every query must see its "
                            "own position (q_offset + q_len <= k_len)");
    e.q_rows = std::max(e.q_rows, s.q_begin + s.q_len);
    e.k_rows = std::max(e.k_rows, s.k_begin + s.k_len);
    // Quadratic in the number of segments (documents per batch: tens), negligible next to the
    // attention itself and free of allocation.
    for (size_t j = 0; j < i; ++j) {
      const AttentionSegment& o = segments[j];
      if (overlap(s.q_begin, s.q_len, o.q_begin, o.q_len))
        fail("attention", describe(i, s) + " overlaps " + describe(j, o) + " in query rows");
      if (backward && overlap(s.k_begin, s.k_len, o.k_begin, o.k_len))
        fail("attention", describe(i, s) + " overlaps " + describe(j, o) +
                              " in key rows; backward needs each key row in one segment");
    }
  }
  return e;
}

int64_t slot_count(const AttentionWorkspace& ws, int64_t items) {
  int64_t n = static_cast<int64_t>(default_thread_pool().size());
  if (ws.max_threads > 0) n = std::min(n, ws.max_threads);
  return std::max<int64_t>(1, std::min(n, items));
}

Plan plan_of(std::span<const AttentionSegment> segments, const Extent& e,
             const AttentionWorkspace& ws, int64_t items) {
  Plan p;
  p.segments = static_cast<int64_t>(segments.size());
  p.slots = slot_count(ws, items);
  for (const AttentionSegment& s : segments) {
    p.k_tiles += (s.k_len + ws.k_tile - 1) / ws.k_tile;
    p.max_q_len = std::max(p.max_q_len, s.q_len);
  }
  p.q_rows = e.q_rows;
  p.k_rows = e.k_rows;
  return p;
}

}  // namespace flash

size_t attention_workspace_bytes(const AttentionShape& shape, const AttentionDims& dims,
                                 const AttentionWorkspace& tuning) {
  if (tuning.q_tile <= 0 || tuning.k_tile <= 0) fail("attention", "tile sizes must be positive");
  if (shape.q_rows <= 0) return 0;
  // The bounds: every segment holds a query, key rows are disjoint, so the key tiles are at
  // most one per k_tile rows plus one partial tile per segment.
  flash::Plan p;
  p.segments = shape.max_segments > 0 ? shape.max_segments : shape.q_rows;
  p.slots = flash::slot_count(tuning, std::numeric_limits<int64_t>::max());
  p.k_tiles = (shape.k_rows + tuning.k_tile - 1) / tuning.k_tile + p.segments;
  p.max_q_len = shape.q_rows;
  p.q_rows = shape.q_rows;
  p.k_rows = shape.k_rows;
  const bool fwd = shape.forward_only;
  switch (shape.dtype) {
    case DType::kF32:
      return std::max(flash::forward_bytes<float>(p, dims, tuning),
                      fwd ? 0 : flash::backward_bytes<float>(p, dims, tuning));
    case DType::kF64:
      return std::max(flash::forward_bytes<double>(p, dims, tuning),
                      fwd ? 0 : flash::backward_bytes<double>(p, dims, tuning));
    case DType::kBF16:
      return std::max(flash::forward_bf16_bytes(p, dims, tuning),
                      fwd ? 0 : flash::backward_bf16_bytes(p, dims, tuning));
    default:
      fail("attention", "no workspace size for " + std::string(dtype_name(shape.dtype)) +
                            " attention (f32, f64 or bf16)");
  }
}
}  // namespace sft::ops
