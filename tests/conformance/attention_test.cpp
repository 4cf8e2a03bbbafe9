// Conformance of ops::attention_forward / attention_backward on views: packed documents (segments
// of length 1 included), GQA, sliding windows that hide whole tiles and keys no query sees,
// decode offsets against a KV cache, two sequences decoding in one call. f32 against the f64 CPU
// run; the f64 backward against f64 central finite differences. The backward always gets the out
// and lse its own forward returned. A query past the last key (its row fully masked) is either
// refused with an error naming attention or gives out = 0, never NaN.
//
// Tolerances (max |err| / max |ref|), f32: 1e-5 for out, dq, dk, dv and lse (softmax in fp32);
// bf16 (q, k, v, out bf16; lse, dout and the gradients f32): 1e-2 for out, dq, dk, dv (two or
// three bf16 roundings of 2⁻⁹ on the way, tests/ops/flash_attention_bf16_test.cpp), 1e-5 for lse.
// Forward also against eager attention written out in f64 in this file (1e-5 f32, 1e-12 f64);
// lse against its log-sum-exp whenever the backend writes lse (the eager CPU kernel of today
// does not; a tiled kernel must).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "conformance.h"
#include "test_workspace.h"

namespace sft::conformance {
namespace {

using ops::AttentionDims;
using ops::AttentionSegment;

struct AttentionCase {
  std::string name;
  int64_t Tq, Tk;
  AttentionDims dims;
  std::vector<AttentionSegment> segments;
};

// Documents of the given lengths packed in one row: one segment each, queries = keys.
AttentionCase packed(std::string name, std::vector<int64_t> lengths, AttentionDims dims) {
  AttentionCase c{std::move(name), 0, 0, dims, {}};
  for (int64_t n : lengths) {
    c.segments.push_back({c.Tq, n, c.Tq, n, 0});
    c.Tq += n;
  }
  c.Tk = c.Tq;
  return c;
}

// One sequence: Tq new queries against Tk keys (cached + new), the first query at q_offset.
AttentionCase decode(std::string name, int64_t Tq, int64_t Tk, int64_t q_offset,
                     AttentionDims dims) {
  return {std::move(name), Tq, Tk, dims, {{0, Tq, 0, Tk, q_offset}}};
}

std::vector<AttentionCase> cases() {
  return {
      packed("one token", {1}, {1, 1, 2, 0}),
      packed("documents 1 7 33 5, GQA 4/2", {1, 7, 33, 5}, {4, 2, 16, 0}),
      packed("documents 9 4, window 3", {9, 4}, {2, 2, 8, 3}),
      packed("documents 5 1 6, window 1", {5, 1, 6}, {2, 1, 4, 1}),
      packed("document 10, window 100", {10}, {2, 2, 8, 100}),
      packed("documents 64 130, GQA 4/2, D 64", {64, 130}, {4, 2, 64, 0}),
      packed("document 70, GQA 2/1, D 128", {70}, {2, 1, 128, 0}),
      packed("documents 1 1 1, D 2", {1, 1, 1}, {3, 3, 2, 0}),
      decode("decode 1 against 9", 1, 9, 8, {4, 1, 16, 0}),
      decode("decode 3 against 11, window 4", 3, 11, 8, {2, 2, 8, 4}),
      decode("decode 3 against 70, window 16, GQA 4/2", 3, 70, 67, {4, 2, 32, 16}),
      // The window hides most key tiles of each query tile, and keys no query sees (dk, dv = 0).
      packed("document 200, window 8", {200}, {2, 1, 8, 8}),
      decode("decode 2 against 40, window 3: keys 0..35 unseen", 2, 40, 38, {2, 2, 4, 3}),
      {"two sequences decoding", 3, 9, {2, 2, 8, 0}, {{0, 2, 0, 6, 4}, {2, 1, 6, 3, 2}}},
      // The score map: a set scale (Granite, Gemma), the soft-cap (Gemma 2).
      packed("documents 9 14, GQA 4/2, scale 0.3", {9, 14}, {4, 2, 16, 0, 0.3, 0}),
      packed("documents 9 14, window 5, soft-cap 2", {9, 14}, {2, 1, 16, 5, 0, 2}),
      decode("decode 3 against 20, scale 0.2, soft-cap 1.5", 3, 20, 17, {2, 2, 8, 0, 0.2, 1.5}),
  };
}

struct AttentionRun {
  Values out, lse, dq, dk, dv;
};

// In bf16, q, k, v and out are bf16 and lse, dout, dq, dk, dv f32 (ops.h's bf16 attention).
AttentionRun run_attention_full(const AttentionCase& c, const Backend& be, Mode m) {
  const AttentionDims& d = c.dims;
  const int64_t qc = d.H * d.D, kc = d.Hkv * d.D;
  const DType f = m.dtype == DType::kBF16 ? DType::kF32 : m.dtype;
  Buffer Q(be, m.dtype, c.Tq, qc, random_values(c.Tq * qc, 1, 1.0, m.grid));
  Buffer K(be, m.dtype, c.Tk, kc, random_values(c.Tk * kc, 2, 1.0, m.grid));
  Buffer V(be, m.dtype, c.Tk, kc, random_values(c.Tk * kc, 3, 1.0, m.grid));
  Buffer DO(be, f, c.Tq, qc, random_values(c.Tq * qc, 4, 1.0, m.grid));
  Buffer O(be, m.dtype, c.Tq, qc, Values(c.Tq * qc, kNaN));
  Buffer L(be, f, c.Tq, d.H, Values(c.Tq * d.H, kNaN));
  Buffer DQ(be, f, c.Tq, qc, Values(c.Tq * qc, kNaN));
  Buffer DK(be, f, c.Tk, kc, Values(c.Tk * kc, kNaN));
  Buffer DV(be, f, c.Tk, kc, Values(c.Tk * kc, kNaN));
  ops::WorkspaceArena arena;
  const ops::Workspace ws = test::attention_workspace(arena, m.dtype, c.segments, d);
  ops::attention_forward(O.view(), L.view(), Q.view(), K.view(), V.view(), c.segments, d, ws);
  ops::attention_backward(DQ.view(), DK.view(), DV.view(), DO.view(), O.view(), L.view(), Q.view(),
                          K.view(), V.view(), c.segments, d, ws);
  return {O.read(), L.read(), DQ.read(), DK.read(), DV.read()};
}

SFT_CONFORMANCE_SUITE(ConformanceAttention);

TEST_P(ConformanceAttention, ForwardAndBackward) {
  SFT_SKIP_WITHOUT_KERNEL("attention");
  for (const AttentionCase& c : cases())
    check_conformance(
        backend(), "attention: " + c.name,
        [&](const Backend& be, Mode m) -> Outputs {
          AttentionRun r = run_attention_full(c, be, m);
          return {{"out", r.out}, {"dq", r.dq}, {"dk", r.dk}, {"dv", r.dv}};
        },
        {DType::kF32}, uniform_tolerance(1e-5));
}

// bf16 (the CPU's AMX kernel; its portable product under conformance.generic_cpu): P, dS and out
// rounded to bf16 inside, fp32 softmax and accumulation; lse is fp32 throughout.
TEST_P(ConformanceAttention, ForwardAndBackwardBf16) {
  SFT_SKIP_WITHOUT_KERNEL("attention");
  for (const AttentionCase& c : cases())
    check_conformance(
        backend(), "attention: " + c.name,
        [&](const Backend& be, Mode m) -> Outputs {
          AttentionRun r = run_attention_full(c, be, m);
          return {{"out", r.out}, {"lse", r.lse}, {"dq", r.dq}, {"dk", r.dk}, {"dv", r.dv}};
        },
        {DType::kBF16}, [](DType, const std::string& out) { return out == "lse" ? 1e-5 : 1e-2; });
}

// Eager attention written out in f64, independent of the kernels (after the swap the f64
// "reference" is the tiled kernel too): out, and lse per (query, head). A fully masked row has out
// 0 and lse NaN (not compared).
struct NaiveAttention {
  Values out, lse;
};

NaiveAttention naive_attention(const AttentionCase& c, DType grid) {
  const AttentionDims& d = c.dims;
  const Values q = random_values(c.Tq * d.H * d.D, 1, 1.0, grid);
  const Values k = random_values(c.Tk * d.Hkv * d.D, 2, 1.0, grid);
  const Values v = random_values(c.Tk * d.Hkv * d.D, 3, 1.0, grid);
  NaiveAttention r{Values(c.Tq * d.H * d.D, 0.0), Values(c.Tq * d.H, kNaN)};
  const double scale = d.scale > 0 ? d.scale : 1 / std::sqrt(double(d.D));
  for (const AttentionSegment& s : c.segments)
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t h = 0; h < d.H; ++h) {
        const int64_t pos = s.q_offset + i, g = h / (d.H / d.Hkv), row = s.q_begin + i;
        std::vector<std::pair<int64_t, double>> scores;  // (key row, scaled score)
        for (int64_t j = 0; j < s.k_len; ++j) {
          if (j > pos || (d.window > 0 && pos - j >= d.window)) continue;
          double dotp = 0;
          for (int64_t e = 0; e < d.D; ++e)
            dotp += q[(row * d.H + h) * d.D + e] * k[((s.k_begin + j) * d.Hkv + g) * d.D + e];
          const double z = dotp * scale;
          scores.push_back(
              {s.k_begin + j, d.softcap > 0 ? std::tanh(z / d.softcap) * d.softcap : z});
        }
        if (scores.empty()) continue;
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (const auto& sc : scores) mx = std::max(mx, sc.second);
        for (const auto& sc : scores) sum += std::exp(sc.second - mx);
        r.lse[row * d.H + h] = mx + std::log(sum);
        for (const auto& sc : scores) {
          const double p = std::exp(sc.second - mx) / sum;
          for (int64_t e = 0; e < d.D; ++e)
            r.out[(row * d.H + h) * d.D + e] += p * v[(sc.first * d.Hkv + g) * d.D + e];
        }
      }
  return r;
}

TEST_P(ConformanceAttention, MatchesNaiveAttention) {
  SFT_SKIP_WITHOUT_KERNEL("attention");
  {
    const Backend& be = backend();
    for (DType dt : {DType::kF32, DType::kF64}) {
      if (!has_dtype(be, dt)) continue;
      const double tol = dt == DType::kF64 ? 1e-12 : 1e-5;
      for (const AttentionCase& c : cases()) {
        SCOPED_TRACE("attention vs naive: " + c.name + " on " + be.name + " in " +
                     std::string(dtype_name(dt)));
        const AttentionRun got = run_attention_full(c, be, {dt, DType::kF32});
        const NaiveAttention want = naive_attention(c, DType::kF32);
        EXPECT_LE(relative_error(got.out, want.out), tol) << "out";
        // lse is compared whenever the backend writes it (a kernel that saves it must).
        size_t written = 0, visible = 0;
        Values g, w;
        for (size_t i = 0; i < want.lse.size(); ++i)
          if (!std::isnan(want.lse[i])) {
            ++visible;
            if (!std::isnan(got.lse[i])) ++written;
            g.push_back(got.lse[i]), w.push_back(want.lse[i]);
          }
        if (written == 0) continue;  // this backend's kernel does not save lse
        EXPECT_EQ(written, visible) << "lse written for only some rows";
        EXPECT_LE(relative_error(g, w), tol) << "lse";
      }
    }
  }
}

// Query 2 sits at position 5 with window 2: keys 4 and 5 would be visible, but there are only 4
// keys, so its row is fully masked. The eager reference gives out = 0 there; a kernel may refuse
// such a segment instead (every query seeing its own position is what training and decode pass).
TEST_P(ConformanceAttention, QueryPastTheLastKeyIsRefusedOrZero) {
  SFT_SKIP_WITHOUT_KERNEL("attention");
  const AttentionCase c = decode("fully masked row", 3, 4, 3, {2, 1, 4, 2});
  {
    const Backend& be = backend();
    for (DType dt : {DType::kF32, DType::kF64}) {
      if (!has_dtype(be, dt)) continue;
      SCOPED_TRACE(std::string(be.name) + " in " + std::string(dtype_name(dt)));
      AttentionRun r;
      try {
        r = run_attention_full(c, be, {dt, DType::kF32});
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("attention"), std::string::npos) << e.what();
        continue;
      }
      const int64_t HD = c.dims.H * c.dims.D;
      for (int64_t x = 2 * HD; x < 3 * HD; ++x) EXPECT_EQ(r.out[x], 0) << "out of the masked row";
      for (const Values* g : {&r.out, &r.dq, &r.dk, &r.dv})
        for (double x : *g) ASSERT_TRUE(std::isfinite(x));
    }
  }
}

void check_attention_fd(const AttentionCase& c) {
  SCOPED_TRACE("attention fd: " + c.name);
  const AttentionDims& d = c.dims;
  const int64_t qc = d.H * d.D, kc = d.Hkv * d.D;
  Values q = random_values(c.Tq * qc, 5, 1.0, DType::kF64);
  Values k = random_values(c.Tk * kc, 6, 1.0, DType::kF64);
  Values v = random_values(c.Tk * kc, 7, 1.0, DType::kF64);
  Values R = random_values(c.Tq * qc, 8, 1.0, DType::kF64);
  Values out(c.Tq * qc), lse(c.Tq * d.H);
  ops::WorkspaceArena arena;
  const ops::Workspace ws = test::attention_workspace(arena, DType::kF64, c.segments, d);
  auto f = [&] {
    ops::attention_forward(host_view(out, c.Tq, qc), host_view(lse, c.Tq, d.H),
                           host_view(q, c.Tq, qc), host_view(k, c.Tk, kc), host_view(v, c.Tk, kc),
                           c.segments, d, ws);
    return dot(out, R);
  };
  f();
  Values dq(q.size(), kNaN), dk(k.size(), kNaN), dv(v.size(), kNaN);
  ops::attention_backward(host_view(dq, c.Tq, qc), host_view(dk, c.Tk, kc), host_view(dv, c.Tk, kc),
                          host_view(R, c.Tq, qc), host_view(out, c.Tq, qc),
                          host_view(lse, c.Tq, d.H), host_view(q, c.Tq, qc), host_view(k, c.Tk, kc),
                          host_view(v, c.Tk, kc), c.segments, d, ws);
  EXPECT_LE(fd_error(q, f, dq), kFdTolerance);
  EXPECT_LE(fd_error(k, f, dk), kFdTolerance);
  EXPECT_LE(fd_error(v, f, dv), kFdTolerance);
}

TEST(ConformanceAttentionReference, BackwardMatchesFiniteDifferences) {
  check_attention_fd(packed("documents 1 6, GQA 4/2", {1, 6}, {4, 2, 4, 0}));
  check_attention_fd(packed("documents 7 3, window 3", {7, 3}, {2, 1, 4, 3}));
  check_attention_fd(decode("decode 3 against 8", 3, 8, 5, {2, 2, 4, 0}));
  check_attention_fd(decode("decode 2 against 9, window 3", 2, 9, 7, {2, 1, 4, 3}));
  check_attention_fd(
      {"two sequences decoding", 3, 9, {2, 2, 2, 0}, {{0, 2, 0, 6, 4}, {2, 1, 6, 3, 2}}});
}

}  // namespace
}  // namespace sft::conformance
