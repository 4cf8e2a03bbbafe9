// ops::Workspace (ops/workspace.h) and the ops that borrow one: a workspace too small for a call
// fails with "[ops] <op>: workspace of N bytes, needs M", M being exactly what the call needs,
// and the size functions cover every call of the shape they were given.
#include <gtest/gtest.h>

#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/rng.h"
#include "ops/ops.h"
#include "test_workspace.h"

namespace sft::ops {
namespace {

TEST(Workspace, TakesAlignedPiecesAndMeasures) {
  alignas(64) std::byte buf[256];
  Workspace ws(buf, sizeof(buf));
  float* a = ws.take<float>(3, "test");
  double* b = ws.take<double>(9, "test");
  EXPECT_EQ(reinterpret_cast<std::byte*>(a), buf);
  EXPECT_EQ(reinterpret_cast<std::byte*>(b), buf + 64);
  EXPECT_EQ(ws.used(), 64u + 128u);
  EXPECT_EQ(ws.rest().size(), 64u);
  Workspace m = Workspace::measuring();
  EXPECT_EQ(m.take<float>(3, "test"), nullptr);
  m.take<double>(9, "test");
  EXPECT_EQ(m.used(), ws.used());
  EXPECT_EQ(Workspace::bytes_for<float>(17), 128u);
}

// The bytes a call reported needing, from its "workspace of N bytes, needs M" error.
size_t needs_of(const std::string& message, const std::string& op, size_t had) {
  const std::regex re("^\\[ops\\] " + op + ": workspace of ([0-9]+) bytes, needs ([0-9]+)");
  std::smatch m;
  EXPECT_TRUE(std::regex_search(message, m, re)) << message;
  if (m.size() < 3) return 0;
  EXPECT_EQ(std::stoull(m[1].str()), had);
  return std::stoull(m[2].str());
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Workspace, TooSmallIsRefused) {
  Workspace ws(nullptr, 10);
  const std::string e = error_of([&] { ws.take<float>(100, "some_op"); });
  EXPECT_EQ(needs_of(e, "some_op", 10), 448u) << e;  // 400 rounded up to whole 64-byte lines
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  Rng rng(seed, 1);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

struct AttentionCall {
  int64_t T = 96;
  AttentionDims dims{4, 2, 16, 0};
  std::vector<float> q, k, v, dout, out, lse, dq, dk, dv;
  AttentionCall()
      : q(random_floats(size_t(T * 64), 1)),
        k(random_floats(size_t(T * 32), 2)),
        v(random_floats(size_t(T * 32), 3)),
        dout(random_floats(size_t(T * 64), 4)),
        out(size_t(T * 64)),
        lse(size_t(T * 4)),
        dq(size_t(T * 64)),
        dk(size_t(T * 32)),
        dv(size_t(T * 32)) {}
  void forward(std::span<const AttentionSegment> segs, Workspace ws) {
    attention_forward(view_of(out.data(), T, 64), view_of(lse.data(), T, 4),
                      view_of(q.data(), T, 64), view_of(k.data(), T, 32), view_of(v.data(), T, 32),
                      segs, dims, ws);
  }
  void backward(std::span<const AttentionSegment> segs, Workspace ws) {
    attention_backward(view_of(dq.data(), T, 64), view_of(dk.data(), T, 32),
                       view_of(dv.data(), T, 32), view_of(dout.data(), T, 64),
                       view_of(out.data(), T, 64), view_of(lse.data(), T, 4),
                       view_of(q.data(), T, 64), view_of(k.data(), T, 32), view_of(v.data(), T, 32),
                       segs, dims, ws);
  }
};

TEST(Workspace, AttentionTooSmallFailsWithWhatItNeeds) {
  AttentionCall c;
  const std::vector<AttentionSegment> segs = {{0, 40, 0, 40, 0}, {40, 56, 40, 56, 0}};
  WorkspaceArena arena;
  const size_t bound = attention_workspace_bytes({.q_rows = c.T, .k_rows = c.T}, c.dims);
  for (bool backward : {false, true}) {
    SCOPED_TRACE(backward ? "backward" : "forward");
    const std::string op = backward ? "attention_backward" : "attention_forward";
    auto call = [&](Workspace ws) { backward ? c.backward(segs, ws) : c.forward(segs, ws); };
    const std::string e = error_of([&] { call(arena.get(100)); });
    const size_t need = needs_of(e, op, 100);
    EXPECT_GT(need, 100u);
    EXPECT_LE(need, bound) << "the size function covers the call";
    EXPECT_NE(error_of([&] { call(arena.get(need - 1)); }), "");
    EXPECT_EQ(error_of([&] { call(arena.get(need)); }), "");
  }
}

// Every way of packing T rows into documents fits attention_workspace_bytes of (T, T), in f32
// and bf16, forward and backward.
TEST(Workspace, AttentionBoundCoversEverySegmentation) {
  AttentionCall c;
  std::vector<uint16_t> qb(c.q.size()), kb(c.k.size()), vb(c.v.size()), ob(c.q.size());
  for (size_t i = 0; i < qb.size(); ++i) qb[i] = f32_to_bf16(c.q[i]);
  for (size_t i = 0; i < kb.size(); ++i) kb[i] = f32_to_bf16(c.k[i]), vb[i] = f32_to_bf16(c.v[i]);
  const int64_t T = c.T;
  std::vector<std::vector<AttentionSegment>> cases;
  for (int64_t len : {int64_t{1}, int64_t{7}, int64_t{64}, T}) {
    std::vector<AttentionSegment> segs;
    for (int64_t at = 0; at < T; at += len) {
      const int64_t n = std::min(len, T - at);
      segs.push_back({at, n, at, n, 0});
    }
    cases.push_back(segs);
  }
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    WorkspaceArena arena;
    const Workspace ws =
        arena.get(attention_workspace_bytes({.dtype = dtype, .q_rows = T, .k_rows = T}, c.dims));
    for (const auto& segs : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + ", " + std::to_string(segs.size()) +
                   " segments");
      if (dtype == DType::kF32) {
        EXPECT_EQ(error_of([&] { c.forward(segs, ws); }), "");
        EXPECT_EQ(error_of([&] { c.backward(segs, ws); }), "");
        continue;
      }
      const View q = view_of(qb.data(), T, 64), k = view_of(kb.data(), T, 32),
                 v = view_of(vb.data(), T, 32), out = view_of(ob.data(), T, 64),
                 lse = view_of(c.lse.data(), T, 4);
      EXPECT_EQ(error_of([&] { attention_forward(out, lse, q, k, v, segs, c.dims, ws); }), "");
      EXPECT_EQ(error_of([&] {
                  attention_backward(view_of(c.dq.data(), T, 64), view_of(c.dk.data(), T, 32),
                                     view_of(c.dv.data(), T, 32), view_of(c.dout.data(), T, 64),
                                     out, lse, q, k, v, segs, c.dims, ws);
                }),
                "");
    }
  }
}

TEST(Workspace, LmHeadTooSmallFailsWithWhatItNeeds) {
  const int64_t T = 20, C = 8, V = 50;
  const std::vector<float> x = random_floats(size_t(T * C), 5), w = random_floats(size_t(V * C), 6);
  std::vector<float> dx(size_t(T * C)), dw(size_t(V * C)), logits(size_t(T * V));
  std::vector<int64_t> y(size_t(T), -1);
  for (int64_t t = 0; t < T; t += 2) y[size_t(t)] = (t * 7) % V;
  std::vector<uint16_t> xb(x.size()), wb(w.size());
  for (size_t i = 0; i < x.size(); ++i) xb[i] = f32_to_bf16(x[i]);
  for (size_t i = 0; i < w.size(); ++i) wb[i] = f32_to_bf16(w[i]);
  WorkspaceArena arena;
  for (DType dtype : {DType::kF32, DType::kBF16})
    for (bool with_logits : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (with_logits ? ", logits" : ""));
      const View xv = dtype == DType::kF32 ? view_of(x.data(), T, C) : view_of(xb.data(), T, C);
      const View wv = dtype == DType::kF32 ? view_of(w.data(), V, C) : view_of(wb.data(), V, C);
      auto call = [&](Workspace ws) {
        lm_head_cross_entropy(view_of(dx.data(), T, C), view_of(dw.data(), V, C),
                              with_logits ? view_of(logits.data(), T, V) : View{}, xv, wv, y.data(),
                              0.1, ws);
      };
      const std::string e = error_of([&] { call(arena.get(64)); });
      const size_t need = needs_of(e, "lm_head_cross_entropy", 64);
      EXPECT_LE(need,
                lm_head_workspace_bytes(
                    {.dtype = dtype, .rows = T, .hidden = C, .vocab = V, .logits = with_logits}));
      EXPECT_NE(error_of([&] { call(arena.get(need - 1)); }), "");
      EXPECT_EQ(error_of([&] { call(arena.get(need)); }), "");
    }
}

}  // namespace
}  // namespace sft::ops
