// ops::attention_forward/backward (tiled, online softmax) against the eager reference
// cpu::attention_forward/backward per segment in double (≤ 1e-12), over packed documents of
// lengths 1, 7, 64, 130, GQA and plain heads, sliding windows, decode against a longer KV run,
// D = 16/64/128 and several tile shapes (partial and masked tiles); float against double
// (1e-5 of the largest value; on AVX-512 the float kernel's register-blocked tile products, with
// SFT_CPU_ISA=generic — ctest ops.flash_attention_generic — its library GEMMs); backward against
// float64 central differences; bit-identical results with 1 and 2 threads; rows outside every
// segment untouched; bad segments refused. The score map (a set scale, the soft-cap) and attention
// sinks (ops::attention_sinks_* around the tiled kernels) against the same reference.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "ops/attention.h"
#include "ops/attention_cases.h"
#include "ops/cpu/attention_reference.h"
#include "ops/ops.h"
#include "test_workspace.h"

namespace sft::ops {
namespace {

using testing::Case;
using testing::decode;
using testing::packed;
using testing::with_score_map;

template <typename T>
std::vector<T> random(size_t n, uint64_t stream) {
  Rng rng(5, stream);
  std::vector<T> x(n);
  for (T& v : x) v = static_cast<T>(rng.normal());
  return x;
}

struct Inputs {
  std::vector<double> q, k, v, dout;
  std::vector<double> sinks;  // (H) or empty
};

Inputs make_inputs(const Case& c) {
  const auto qn = static_cast<size_t>(c.Tq * c.dims.H * c.dims.D);
  const auto kn = static_cast<size_t>(c.Tk * c.dims.Hkv * c.dims.D);
  return {random<double>(qn, 1),
          random<double>(kn, 2),
          random<double>(kn, 3),
          random<double>(qn, 4),
          {}};
}

template <typename T>
std::vector<T> cast(const std::vector<double>& x) {
  return std::vector<T>(x.begin(), x.end());
}

struct Grads {
  std::vector<double> out, lse, dq, dk, dv, dsinks;
};

// The eager reference, one segment at a time; lse straight from the definition.
Grads reference(const Case& c, const Inputs& in) {
  const int64_t H = c.dims.H, Hkv = c.dims.Hkv, D = c.dims.D;
  Grads g{std::vector<double>(in.q.size()), std::vector<double>(static_cast<size_t>(c.Tq * H)),
          std::vector<double>(in.q.size()), std::vector<double>(in.k.size()),
          std::vector<double>(in.k.size()), std::vector<double>(in.sinks.size())};
  const double* sinks = in.sinks.empty() ? nullptr : in.sinks.data();
  for (const AttentionSegment& s : c.segs) {
    cpu::AttentionShape sh{s.q_len,       s.k_len,      s.q_offset,    H, Hkv, D,
                           c.dims.window, c.dims.scale, c.dims.softcap};
    std::vector<double> probs(static_cast<size_t>(H * s.q_len * s.k_len));
    std::vector<double> scratch(static_cast<size_t>(s.q_len * s.k_len));
    const double* q = in.q.data() + s.q_begin * H * D;
    const double* k = in.k.data() + s.k_begin * Hkv * D;
    const double* v = in.v.data() + s.k_begin * Hkv * D;
    cpu::attention_forward(g.out.data() + s.q_begin * H * D, probs.data(), q, k, v, sh, sinks);
    cpu::attention_backward(g.dq.data() + s.q_begin * H * D, g.dk.data() + s.k_begin * Hkv * D,
                            g.dv.data() + s.k_begin * Hkv * D, scratch.data(),
                            in.dout.data() + s.q_begin * H * D, probs.data(), q, k, v, sh,
                            sinks ? g.dsinks.data() : nullptr);
    const double scale = c.dims.scale > 0 ? c.dims.scale : 1.0 / std::sqrt(static_cast<double>(D));
    const double cap = c.dims.softcap;
    for (int64_t i = 0; i < s.q_len; ++i)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t pos = s.q_offset + i, g_kv = h / (H / Hkv);
        const int64_t lo = c.dims.window > 0 ? std::max<int64_t>(0, pos - c.dims.window + 1) : 0;
        double mx = -INFINITY, sum = 0;
        std::vector<double> sc;
        for (int64_t j = lo; j <= pos; ++j) {
          double dot = 0;
          for (int64_t x = 0; x < D; ++x)
            dot += q[(i * H + h) * D + x] * k[(j * Hkv + g_kv) * D + x];
          const double z = cap > 0 ? std::tanh(dot * scale / cap) * cap : dot * scale;
          sc.push_back(z);
          mx = std::max(mx, z);
        }
        if (sinks) sc.push_back(sinks[h]), mx = std::max(mx, sinks[h]);
        for (double z : sc) sum += std::exp(z - mx);
        g.lse[static_cast<size_t>((s.q_begin + i) * H + h)] = mx + std::log(sum);
      }
  }
  return g;
}

template <typename T>
struct Flash {
  std::vector<T> out, lse, dq, dk, dv, dsinks;
};

template <typename T>
Flash<T> run_flash(const Case& c, const Inputs& in, AttentionWorkspace& ws, T fill = T(0)) {
  const std::vector<T> q = cast<T>(in.q), k = cast<T>(in.k), v = cast<T>(in.v),
                       dout = cast<T>(in.dout);
  Flash<T> f{
      std::vector<T>(q.size(), fill), std::vector<T>(static_cast<size_t>(c.Tq * c.dims.H), fill),
      std::vector<T>(q.size(), fill), std::vector<T>(k.size(), fill),
      std::vector<T>(k.size(), fill), {}};
  WorkspaceArena arena;
  test::give_attention_memory(ws, arena, DTypeOf<T>::value, c.segs, c.dims);
  attention_forward(f.out.data(), f.lse.data(), q.data(), k.data(), v.data(), c.segs, c.dims, ws);
  const std::vector<T> sinks = cast<T>(in.sinks);
  const int64_t H = c.dims.H;
  const View out_view = view_of(f.out.data(), c.Tq, H * c.dims.D);
  const View lse_view = view_of(f.lse.data(), c.Tq, H);
  if (!sinks.empty()) attention_sinks_forward(out_view, lse_view, view_of(sinks.data(), 1, H));
  attention_backward(f.dq.data(), f.dk.data(), f.dv.data(), dout.data(), f.out.data(), f.lse.data(),
                     q.data(), k.data(), v.data(), c.segs, c.dims, ws);
  if (!sinks.empty()) {
    f.dsinks.assign(sinks.size(), T(0));
    attention_sinks_backward(view_of(f.dsinks.data(), 1, H),
                             view_of(dout.data(), c.Tq, H * c.dims.D), out_view, lse_view,
                             view_of(sinks.data(), 1, H));
  }
  return f;
}

double max_abs(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m = std::max(m, std::abs(v));
  return m;
}

template <typename T>
double max_diff(const std::vector<T>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < b.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

void expect_matches_reference(const Case& c, int64_t q_tile, int64_t k_tile, bool sinks = false) {
  SCOPED_TRACE("H " + std::to_string(c.dims.H) + " Hkv " + std::to_string(c.dims.Hkv) + " D " +
               std::to_string(c.dims.D) + " window " + std::to_string(c.dims.window) + " tiles " +
               std::to_string(q_tile) + "x" + std::to_string(k_tile) + " scale " +
               std::to_string(c.dims.scale) + " softcap " + std::to_string(c.dims.softcap) +
               (sinks ? " sinks" : ""));
  Inputs in = make_inputs(c);
  if (sinks) in.sinks = random<double>(static_cast<size_t>(c.dims.H), 6);
  const Grads want = reference(c, in);
  AttentionWorkspace ws;
  ws.q_tile = q_tile;
  ws.k_tile = k_tile;
  const Flash<double> got = run_flash<double>(c, in, ws);
  EXPECT_LE(max_diff(got.out, want.out), 1e-12);
  EXPECT_LE(max_diff(got.lse, want.lse), 1e-12);
  EXPECT_LE(max_diff(got.dq, want.dq), 1e-12);
  EXPECT_LE(max_diff(got.dk, want.dk), 1e-12);
  EXPECT_LE(max_diff(got.dv, want.dv), 1e-12);
  if (sinks) EXPECT_LE(max_diff(got.dsinks, want.dsinks), 1e-12);
}

const std::vector<int64_t> kDocs = {1, 7, 64, 130};

TEST(FlashAttention, PackedDocumentsMatchEagerReference) {
  for (int64_t D : {16, 64, 128})
    for (auto [H, Hkv] : {std::pair<int64_t, int64_t>{4, 2}, {4, 4}})
      expect_matches_reference(packed(kDocs, H, Hkv, D, 0), AttentionWorkspace{}.q_tile,
                               AttentionWorkspace{}.k_tile);
}

TEST(FlashAttention, PartialAndSmallTilesMatchEagerReference) {
  for (auto [bq, bk] : {std::pair<int64_t, int64_t>{8, 16}, {5, 7}, {32, 128}, {1, 1}})
    expect_matches_reference(packed(kDocs, 4, 2, 16, 0), bq, bk);
}

TEST(FlashAttention, SlidingWindowMatchesEagerReference) {
  for (int64_t window : {1, 5, 50, 200})
    for (auto [bq, bk] : {std::pair<int64_t, int64_t>{64, 64}, {8, 16}, {5, 7}})
      expect_matches_reference(packed(kDocs, 4, 2, 16, window), bq, bk);
  expect_matches_reference(packed(kDocs, 4, 4, 64, 20), 64, 64);
}

TEST(FlashAttention, DecodeAgainstLongerKeysMatchesEagerReference) {
  for (int64_t fresh : {1, 3})
    for (int64_t window : {0, 9})
      for (auto [bq, bk] : {std::pair<int64_t, int64_t>{64, 64}, {2, 16}}) {
        expect_matches_reference(decode(100 - fresh, fresh, 4, 2, 128, window), bq, bk);
        expect_matches_reference(decode(70, fresh, 4, 4, 16, window), bq, bk);
      }
}

// Granite's attention_multiplier and Gemma's query_pre_attn_scalar set the scale; Gemma 2 caps
// the scores at 50 (here 2, with scores of a few units, so the cap bends them).
TEST(FlashAttention, ScaleAndSoftCapMatchEagerReference) {
  for (auto [scale, cap] : {std::pair<double, double>{0.5, 0}, {0, 2}, {0.3, 2}})
    for (auto [bq, bk] : {std::pair<int64_t, int64_t>{64, 64}, {5, 7}}) {
      expect_matches_reference(with_score_map(packed(kDocs, 4, 2, 16, 0), scale, cap), bq, bk);
      expect_matches_reference(with_score_map(packed(kDocs, 4, 4, 64, 20), scale, cap), bq, bk);
      expect_matches_reference(with_score_map(decode(70, 3, 4, 2, 16, 9), scale, cap), bq, bk);
    }
}

TEST(FlashAttention, SinksAroundTheTiledKernelsMatchEagerReference) {
  for (auto [bq, bk] : {std::pair<int64_t, int64_t>{64, 64}, {5, 7}}) {
    expect_matches_reference(packed(kDocs, 4, 2, 16, 0), bq, bk, true);
    expect_matches_reference(packed(kDocs, 4, 4, 64, 20), bq, bk, true);
    expect_matches_reference(with_score_map(packed(kDocs, 4, 2, 16, 0), 0.3, 2), bq, bk, true);
  }
}

TEST(FlashAttention, FloatAgreesWithDouble) {
  for (int64_t window : {0, 50}) {
    const Case c = packed(kDocs, 4, 2, 64, window);
    const Inputs in = make_inputs(c);
    AttentionWorkspace ws;
    const Flash<double> d = run_flash<double>(c, in, ws);
    const Flash<float> f = run_flash<float>(c, in, ws);
    EXPECT_LE(max_diff(f.out, d.out), 1e-5 * max_abs(d.out));
    EXPECT_LE(max_diff(f.lse, d.lse), 1e-5 * max_abs(d.lse));
    EXPECT_LE(max_diff(f.dq, d.dq), 1e-5 * max_abs(d.dq));
    EXPECT_LE(max_diff(f.dk, d.dk), 1e-5 * max_abs(d.dk));
    EXPECT_LE(max_diff(f.dv, d.dv), 1e-5 * max_abs(d.dv));
  }
}

// The float kernel on every edge of its tile products (the AVX-512 microkernels' row and column
// remainders where this CPU takes them, the library GEMMs otherwise): head dims that are not a
// multiple of 16, tiles smaller and larger than the register block, windows, the score map,
// a decode against a longer KV run. Same 1e-5 as FloatAgreesWithDouble.
TEST(FlashAttention, FloatAgreesWithDoubleOnEveryTileShape) {
  const std::vector<Case> cases = {
      packed(kDocs, 4, 2, 128, 0),
      packed(kDocs, 2, 2, 40, 0),
      packed({3, 90}, 2, 1, 8, 0),
      packed(kDocs, 4, 2, 64, 50),
      with_score_map(packed(kDocs, 4, 4, 24, 20), 0.3, 2),
      decode(100, 3, 4, 2, 128, 0),
  };
  for (const Case& c : cases)
    for (auto [bq, bk] : {std::pair<int64_t, int64_t>{128, 64}, {5, 7}, {13, 33}, {64, 128}}) {
      SCOPED_TRACE("D " + std::to_string(c.dims.D) + " window " + std::to_string(c.dims.window) +
                   " tiles " + std::to_string(bq) + "x" + std::to_string(bk) + " softcap " +
                   std::to_string(c.dims.softcap));
      const Inputs in = make_inputs(c);
      AttentionWorkspace ws;
      ws.q_tile = bq;
      ws.k_tile = bk;
      const Flash<double> d = run_flash<double>(c, in, ws);
      const Flash<float> f = run_flash<float>(c, in, ws);
      EXPECT_LE(max_diff(f.out, d.out), 1e-5 * max_abs(d.out));
      EXPECT_LE(max_diff(f.lse, d.lse), 1e-5 * max_abs(d.lse));
      EXPECT_LE(max_diff(f.dq, d.dq), 1e-5 * max_abs(d.dq));
      EXPECT_LE(max_diff(f.dk, d.dk), 1e-5 * max_abs(d.dk));
      EXPECT_LE(max_diff(f.dv, d.dv), 1e-5 * max_abs(d.dv));
    }
}

// Loss Σ out ⊙ dout, so its gradients are what backward returns for that dout.
double loss(const Case& c, const Inputs& in, AttentionWorkspace& ws) {
  std::vector<double> out(in.q.size()), lse(static_cast<size_t>(c.Tq * c.dims.H));
  WorkspaceArena arena;
  test::give_attention_memory(ws, arena, DType::kF64, c.segs, c.dims);
  attention_forward(out.data(), lse.data(), in.q.data(), in.k.data(), in.v.data(), c.segs, c.dims,
                    ws);
  double s = 0;
  for (size_t i = 0; i < out.size(); ++i) s += out[i] * in.dout[i];
  return s;
}

TEST(FlashAttention, BackwardMatchesFiniteDifferences) {
  for (const Case& c :
       {packed({3, 6}, 2, 1, 4, 4), with_score_map(packed({3, 6}, 2, 1, 4, 4), 0.8, 1.5)}) {
    Inputs in = make_inputs(c);
    AttentionWorkspace ws;
    ws.q_tile = 2;
    ws.k_tile = 3;
    const Flash<double> f = run_flash<double>(c, in, ws);
    const double eps = 1e-5;
    auto check = [&](std::vector<double>& x, const std::vector<double>& grad, const char* name) {
      for (size_t i = 0; i < x.size(); ++i) {
        const double x0 = x[i];
        x[i] = x0 + eps;
        const double up = loss(c, in, ws);
        x[i] = x0 - eps;
        const double down = loss(c, in, ws);
        x[i] = x0;
        EXPECT_NEAR(grad[i], (up - down) / (2 * eps), 1e-8) << name << "[" << i << "]";
      }
    };
    check(in.q, f.dq, "dq");
    check(in.k, f.dk, "dk");
    check(in.v, f.dv, "dv");
  }
}

TEST(FlashAttention, BitIdenticalWithOneAndTwoThreads) {
  if (default_thread_pool().size() < 2) GTEST_SKIP() << "the default pool has one thread";
  const std::vector<Case> cases = {
      packed({200, 1, 7, 64, 130, 300}, 4, 2, 64, 0),
      with_score_map(packed({200, 1, 7, 64, 130, 300}, 4, 2, 64, 30), 0, 3.0),
      packed({384, 256, 70, 1}, 16, 8, 128, 0),  // Qwen3-0.6B's heads
  };
  for (const Case& c : cases) {
    const Inputs in = make_inputs(c);
    AttentionWorkspace serial, threaded;
    serial.max_threads = 1;
    threaded.max_threads = 2;
    const Flash<float> a = run_flash<float>(c, in, serial);
    const Flash<float> b = run_flash<float>(c, in, threaded);
    const Flash<float> again = run_flash<float>(c, in, threaded);
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.lse, b.lse);
    EXPECT_EQ(a.dq, b.dq);
    EXPECT_EQ(a.dk, b.dk);
    EXPECT_EQ(a.dv, b.dv);
    EXPECT_EQ(b.dq, again.dq);
    EXPECT_EQ(b.dk, again.dk);
  }
}

TEST(FlashAttention, RowsOutsideSegmentsUntouched) {
  // Rows 0–1 and 9 belong to no segment.
  Case c;
  c.dims = {2, 1, 8, 0};
  c.segs = {{2, 3, 2, 3, 0}, {5, 4, 5, 4, 0}};
  c.Tq = c.Tk = 10;
  const Inputs in = make_inputs(c);
  AttentionWorkspace ws;
  const Flash<double> f = run_flash<double>(c, in, ws, 7.0);
  for (int64_t row : {0, 1, 9}) {
    for (int64_t x = 0; x < 16; ++x) {
      EXPECT_EQ(f.out[static_cast<size_t>(row * 16 + x)], 7.0);
      EXPECT_EQ(f.dq[static_cast<size_t>(row * 16 + x)], 7.0);
    }
    for (int64_t x = 0; x < 8; ++x) {
      EXPECT_EQ(f.dk[static_cast<size_t>(row * 8 + x)], 7.0);
      EXPECT_EQ(f.dv[static_cast<size_t>(row * 8 + x)], 7.0);
    }
  }
  EXPECT_NE(f.dk[2 * 8], 7.0);
}

TEST(FlashAttention, RefusesBadSegments) {
  std::vector<double> buf(1024);
  AttentionWorkspace ws;
  auto fwd = [&](std::vector<AttentionSegment> segs, AttentionDims dims) {
    attention_forward(buf.data(), buf.data(), buf.data(), buf.data(), buf.data(), segs, dims, ws);
  };
  const AttentionDims dims{2, 1, 4, 0};
  EXPECT_THROW(fwd({{0, 4, 0, 3, 0}}, dims), Error);                       // query past last key
  EXPECT_THROW(fwd({{0, 1, 0, 4, 4}}, dims), Error);                       // q_offset past keys
  EXPECT_THROW(fwd({{0, 4, 0, 4, 0}, {2, 4, 4, 4, 0}}, dims), Error);      // q rows overlap
  EXPECT_THROW(fwd({{0, 4, 0, 4, 0}}, AttentionDims{3, 2, 4, 0}), Error);  // H % Hkv
}

}  // namespace
}  // namespace sft::ops
