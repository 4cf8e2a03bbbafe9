// Workspaces for the tests' op calls (ops/workspace.h). A test owns the memory in an
// ops::WorkspaceArena, as the model owns its own in its arenas, and asks for a workspace sized
// by the op's size function just before the call (the arena may move when it grows, so a
// workspace is good until the next request from the same arena).
#pragma once

#include <algorithm>
#include <span>

#include "ops/ops.h"

namespace sft::test {

// The AttentionShape covering calls over exactly these segments; their key rows may overlap
// (several sequences against one cache in decode tests), so k_rows counts every segment's keys.
inline ops::AttentionShape attention_shape(DType dtype,
                                           std::span<const ops::AttentionSegment> segments) {
  ops::AttentionShape s;
  s.dtype = dtype;
  int64_t keys = 0, k_end = 0;
  for (const ops::AttentionSegment& g : segments) {
    s.q_rows = std::max(s.q_rows, g.q_begin + g.q_len);
    k_end = std::max(k_end, g.k_begin + g.k_len);
    keys += g.k_len;
  }
  s.k_rows = std::max(k_end, keys);
  s.max_segments = std::max<int64_t>(1, static_cast<int64_t>(segments.size()));
  return s;
}

inline ops::Workspace attention_workspace(ops::WorkspaceArena& arena, DType dtype,
                                          std::span<const ops::AttentionSegment> segments,
                                          const ops::AttentionDims& dims,
                                          const ops::AttentionWorkspace& tuning = {}) {
  return arena.get(ops::attention_workspace_bytes(attention_shape(dtype, segments), dims, tuning));
}

// A raw attention kernel's workspace: `ws` keeps its tiles and gets memory from `arena`.
inline void give_attention_memory(ops::AttentionWorkspace& ws, ops::WorkspaceArena& arena,
                                  DType dtype, std::span<const ops::AttentionSegment> segments,
                                  const ops::AttentionDims& dims) {
  ws.memory = attention_workspace(arena, dtype, segments, dims, ws);
}

// ops::lm_head_cross_entropy's workspace for x against w.
inline ops::Workspace lm_head_workspace(ops::WorkspaceArena& arena, const ops::View& x,
                                        const ops::View& w, bool logits = false,
                                        bool shard = false) {
  return arena.get(ops::lm_head_workspace_bytes({.dtype = x.dtype,
                                                 .rows = x.rows,
                                                 .hidden = x.cols,
                                                 .vocab = w.rows,
                                                 .logits = logits,
                                                 .shard = shard}));
}

// A raw LM-head kernel's workspace (T = float, double or uint16_t for bf16).
template <typename T>
void give_lm_head_memory(ops::LmHeadWorkspace& ws, ops::WorkspaceArena& arena, int64_t Tn,
                         int64_t C, int64_t V, bool shard = false) {
  ws.memory = arena.get(ops::lm_head_kernel_workspace_bytes<T>(Tn, C, V, shard, ws.tuning));
}

}  // namespace sft::test
