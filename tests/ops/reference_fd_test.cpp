// Float64 finite-difference checks of every reference kernel's backward (relative error ≤ 1e-6).
// Each layer's output is reduced to a scalar f = Σ out ⊙ R with a fixed random R, so the
// analytic gradient is backward(dout = R); it is compared with central differences of f.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "core/rng.h"
#include "finite_differences.h"
#include "ops/cpu/attention_reference.h"
#include "ops/cpu/embedding.h"
#include "ops/cpu/gelu_tanh_gated.h"
#include "ops/cpu/lm_head_reference.h"
#include "ops/cpu/rmsnorm.h"
#include "ops/cpu/rope.h"
#include "ops/cpu/swiglu.h"
#include "ops/ops.h"

namespace sft::ops::cpu {
namespace {

using Vec = std::vector<double>;

Vec randn(size_t n, uint64_t stream, double scale = 1.0) {
  Rng rng(1234, stream);
  Vec v(n);
  for (double& x : v) x = rng.normal() * scale;
  return v;
}

using test::dot;
using test::fd_error;

constexpr double kTol = test::kFdTolerance;

TEST(LayerFiniteDifferences, RmsNorm) {
  const int64_t N = 5, C = 7;
  Vec x = randn(N * C, 1), w = randn(C, 2), R = randn(N * C, 3);
  Vec out(N * C), rstd(N);
  auto f = [&] {
    rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6);
    return dot(out, R);
  };
  f();
  Vec dx(N * C), dw(C, 0.0);
  rmsnorm_backward(dx.data(), dw.data(), R.data(), x.data(), rstd.data(), w.data(), N, C);
  EXPECT_LE(fd_error(x, f, dx), kTol);
  EXPECT_LE(fd_error(w, f, dw), kTol);
}

TEST(LayerFiniteDifferences, Rope) {
  const int64_t T = 4, NH = 3, D = 8;
  Vec x = randn(T * NH * D, 4), R = randn(T * NH * D, 5), cs(T * D / 2), sn(T * D / 2);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < D / 2; ++i) {
      const double a = double(t + 1) * std::pow(100.0, -double(i) / double(D / 2));
      cs[t * D / 2 + i] = 1.1 * std::cos(a);  // an attention scaling ≠ 1
      sn[t * D / 2 + i] = 1.1 * std::sin(a);
    }
  auto f = [&] {
    Vec y = x;
    rope_forward(y.data(), cs.data(), sn.data(), T, NH, D, NH * D);
    return dot(y, R);
  };
  Vec dx = R;
  rope_backward(dx.data(), cs.data(), sn.data(), T, NH, D, NH * D);
  EXPECT_LE(fd_error(x, f, dx), kTol);
}

// Partial rotary (R = 4 of D = 8): the first R dims of each head turn as a full rotation of an
// R-wide head would turn them; the rest pass through; backward is the rotation's transpose.
TEST(LayerFiniteDifferences, PartialRope) {
  const int64_t T = 3, NH = 2, D = 8, R = 4;
  Vec x = randn(T * NH * D, 14), G = randn(T * NH * D, 15), cs(T * R / 2), sn(T * R / 2);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < R / 2; ++i) {
      cs[t * R / 2 + i] = std::cos(double(t + 1) * (i + 1));
      sn[t * R / 2 + i] = std::sin(double(t + 1) * (i + 1));
    }
  Vec y = x, narrow(T * NH * R);
  rope_forward(y.data(), cs.data(), sn.data(), T, NH, D, NH * D, R);
  for (int64_t r = 0; r < T * NH; ++r)
    for (int64_t i = 0; i < R; ++i) narrow[r * R + i] = x[r * D + i];
  rope_forward(narrow.data(), cs.data(), sn.data(), T, NH, R, NH * R);
  for (int64_t r = 0; r < T * NH; ++r) {
    for (int64_t i = 0; i < R; ++i) EXPECT_EQ(y[r * D + i], narrow[r * R + i]);
    for (int64_t i = R; i < D; ++i) EXPECT_EQ(y[r * D + i], x[r * D + i]);
  }
  auto f = [&] {
    Vec z = x;
    rope_forward(z.data(), cs.data(), sn.data(), T, NH, D, NH * D, R);
    return dot(z, G);
  };
  Vec dx = G;
  rope_backward(dx.data(), cs.data(), sn.data(), T, NH, D, NH * D, R);
  EXPECT_LE(fd_error(x, f, dx), kTol);
}

void check_attention(const AttentionShape& s, bool with_sinks = false) {
  Vec q = randn(s.Tq * s.H * s.D, 6), k = randn(s.Tk * s.Hkv * s.D, 7),
      v = randn(s.Tk * s.Hkv * s.D, 8), R = randn(s.Tq * s.H * s.D, 9);
  Vec sinks = with_sinks ? randn(s.H, 13) : Vec{};
  const double* sink = with_sinks ? sinks.data() : nullptr;
  Vec out(q.size()), probs(s.H * s.Tq * s.Tk);
  auto f = [&] {
    attention_forward(out.data(), probs.data(), q.data(), k.data(), v.data(), s, sink);
    return dot(out, R);
  };
  f();
  Vec dq(q.size()), dk(k.size()), dv(v.size()), scratch(s.Tq * s.Tk), dsinks(s.H, 0.0);
  attention_backward(dq.data(), dk.data(), dv.data(), scratch.data(), R.data(), probs.data(),
                     q.data(), k.data(), v.data(), s, with_sinks ? dsinks.data() : nullptr);
  EXPECT_LE(fd_error(q, f, dq), kTol);
  EXPECT_LE(fd_error(k, f, dk), kTol);
  EXPECT_LE(fd_error(v, f, dv), kTol);
  if (with_sinks) EXPECT_LE(fd_error(sinks, f, dsinks), kTol);
}

AttentionShape with_score_map(AttentionShape s, double scale, double softcap) {
  s.scale = scale;
  s.softcap = softcap;
  return s;
}

TEST(LayerFiniteDifferences, AttentionCausalGqa) {
  check_attention({6, 6, 0, 4, 2, 4, 0});
}
TEST(LayerFiniteDifferences, AttentionSlidingWindow) {
  check_attention({7, 7, 0, 2, 1, 4, 3});
}
TEST(LayerFiniteDifferences, AttentionAgainstCache) {
  check_attention({3, 8, 5, 2, 2, 4, 0});
}
// Scores of a few units through a cap of 1.5: tanh well away from linear.
TEST(LayerFiniteDifferences, AttentionScaleAndSoftCap) {
  check_attention(with_score_map({6, 6, 0, 4, 2, 4, 0}, 0.9, 0));
  check_attention(with_score_map({6, 6, 0, 4, 2, 4, 0}, 0.9, 1.5));
  check_attention(with_score_map({7, 7, 0, 2, 1, 4, 3}, 0, 1.5));
}
TEST(LayerFiniteDifferences, AttentionSinks) {
  check_attention({6, 6, 0, 4, 2, 4, 0}, true);
  check_attention({3, 8, 5, 2, 2, 4, 2}, true);
}

TEST(LayerFiniteDifferences, SwiGlu) {
  const int64_t N = 11;
  Vec gate = randn(N, 10, 2.0), up = randn(N, 11), R = randn(N, 12), h(N);
  auto f = [&] {
    swiglu_forward(h.data(), gate.data(), up.data(), N);
    return dot(h, R);
  };
  Vec dg(N), du(N);
  swiglu_backward(dg.data(), du.data(), R.data(), gate.data(), up.data(), N);
  EXPECT_LE(fd_error(gate, f, dg), kTol);
  EXPECT_LE(fd_error(up, f, du), kTol);
}

// Gemma's gated GELU (tanh approximation), gates wide enough to reach the curved part and the
// saturated tails.
TEST(LayerFiniteDifferences, GeluTanhGated) {
  const int64_t N = 11;
  Vec gate = randn(N, 40, 2.5), up = randn(N, 41), R = randn(N, 42), h(N);
  auto f = [&] {
    gelu_tanh_gated_forward(h.data(), gate.data(), up.data(), N);
    return dot(h, R);
  };
  Vec dg(N), du(N);
  gelu_tanh_gated_backward(dg.data(), du.data(), R.data(), gate.data(), up.data(), N);
  EXPECT_LE(fd_error(gate, f, dg), kTol);
  EXPECT_LE(fd_error(up, f, du), kTol);
  // transformers' gelu_pytorch_tanh at 1: 0.5 · (1 + tanh(√(2/π) · 1.044715)).
  double one = 1, unit = 1, out = 0;
  gelu_tanh_gated_forward(&out, &one, &unit, 1);
  EXPECT_NEAR(out, 0.8411919906082768, 1e-15);
}

TEST(LayerFiniteDifferences, Linear) {
  const int64_t N = 4, I = 5, O = 3;
  Vec x = randn(N * I, 13), w = randn(O * I, 14), b = randn(O, 15), R = randn(N * O, 16), y(N * O);
  // The linear's math on the view-level ops, in f64: y = x wᵀ + b.
  auto f = [&] {
    ops::matmul(view_of(y.data(), N, O), view_of(x.data(), N, I), view_of(w.data(), O, I), false,
                true, false);
    ops::add_bias(view_of(y.data(), N, O), view_of(b.data(), 1, O));
    return dot(y, R);
  };
  Vec dx(N * I), dw(O * I, 0.0), db(O, 0.0);
  const View dy = view_of(R.data(), N, O);
  ops::matmul(view_of(dx.data(), N, I), dy, view_of(w.data(), O, I), false, false, false);
  ops::matmul(view_of(dw.data(), O, I), dy, view_of(x.data(), N, I), true, false, true);
  ops::bias_backward(view_of(db.data(), 1, O), dy);
  EXPECT_LE(fd_error(x, f, dx), kTol);
  EXPECT_LE(fd_error(w, f, dw), kTol);
  EXPECT_LE(fd_error(b, f, db), kTol);
}

TEST(LayerFiniteDifferences, Embedding) {
  const int64_t V = 6, C = 4, T = 5;
  const std::vector<int64_t> ids = {3, 1, 3, 0, 5};  // a repeated id accumulates
  Vec wte = randn(V * C, 17), R = randn(T * C, 18), out(T * C);
  auto f = [&] {
    embedding_forward(out.data(), ids.data(), wte.data(), T, C);
    return dot(out, R);
  };
  Vec dw(V * C, 0.0);
  embedding_backward(dw.data(), R.data(), ids.data(), T, C);
  EXPECT_LE(fd_error(wte, f, dw), kTol);
}

TEST(LayerFiniteDifferences, LmHeadCrossEntropy) {
  const int64_t T = 6, C = 5, V = 9;
  Vec x = randn(T * C, 19), w = randn(V * C, 20);
  const std::vector<int64_t> targets = {2, -1, 8, 0, -1, 2};
  const double scale = 0.25;
  std::vector<double> ws;
  auto f = [&] {
    return scale *
           lm_head_loss_forward<double>(nullptr, x.data(), w.data(), targets.data(), T, C, V, ws)
               .loss_sum;
  };
  Vec dx(T * C), dw(V * C, 0.0);
  lm_head_loss_backward(dx.data(), dw.data(), x.data(), w.data(), targets.data(), scale, T, C, V,
                        ws);
  EXPECT_LE(fd_error(x, f, dx), kTol);
  EXPECT_LE(fd_error(w, f, dw), kTol);
}

}  // namespace
}  // namespace sft::ops::cpu
