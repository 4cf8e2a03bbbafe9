// ops::lm_head_cross_entropy against an obvious full-logits reference (double, 1e-12), float
// against double, gradients against central finite differences, unscored rows, ties, T = 1,
// the logits output, the bf16 path against a reference that rounds logits and dlogits the same way,
// today's model::lm_head_loss (the statistics validated against transformers), and bit-identical
// reruns. Small chunk heights and vocabulary blocks are forced so every edge of the chunking is
// crossed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/rng.h"
#include "ops/cpu/lm_head_reference.h"
#include "ops/lm_head_ce.h"
#include "ops/ops.h"
#include "test_workspace.h"

namespace sft::ops {
namespace {

struct Problem {
  int64_t T, C, V;
  std::vector<double> x, w;
  std::vector<int64_t> y;
};

Problem make_problem(int64_t T, int64_t C, int64_t V, uint64_t seed, double unscored = 0.25) {
  Rng rng(seed);
  Problem p{T, C, V, {}, {}, {}};
  for (int64_t i = 0; i < T * C; ++i) p.x.push_back(rng.normal());
  for (int64_t i = 0; i < V * C; ++i) p.w.push_back(0.5 * rng.normal());
  for (int64_t t = 0; t < T; ++t)
    p.y.push_back(rng.uniform() < unscored ? -1 : static_cast<int64_t>(rng.below(V)));
  return p;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

double round_bf16(double v) {
  return bf16_to_f32(f32_to_bf16(static_cast<float>(v)));
}

// Full (T × V) logits in double, then softmax, statistics and gradients the textbook way.
struct Reference {
  LmHeadStats stats;
  std::vector<double> logits, dx, dw;
};

Reference reference(const Problem& p, double scale, const std::vector<double>& dw0,
                    bool round_dz_to_bf16 = false, bool round_logits_to_bf16 = false,
                    double softcap = 0) {
  Reference r;
  r.logits.assign(p.T * p.V, 0.0);
  r.dx.assign(p.T * p.C, 0.0);
  r.dw = dw0;
  for (int64_t t = 0; t < p.T; ++t) {
    double* z = &r.logits[t * p.V];
    for (int64_t v = 0; v < p.V; ++v)
      for (int64_t c = 0; c < p.C; ++c) z[v] += p.x[t * p.C + c] * p.w[v * p.C + c];
    if (round_logits_to_bf16)
      for (int64_t v = 0; v < p.V; ++v) z[v] = round_bf16(z[v]);
    std::vector<double> th(p.V);  // autocast's rounded tanh (the bf16 cap's backward reads it)
    if (softcap > 0 && round_logits_to_bf16)  // bf16 tensor ops / cap, tanh, · cap, each rounded
      for (int64_t v = 0; v < p.V; ++v) {
        th[v] = round_bf16(std::tanh(round_bf16(z[v] / softcap)));
        z[v] = round_bf16(th[v] * softcap);
      }
    else if (softcap > 0)
      for (int64_t v = 0; v < p.V; ++v) z[v] = softcap * std::tanh(z[v] / softcap);
    if (p.y[t] < 0) continue;
    double mx = z[0];
    int64_t arg = 0;
    for (int64_t v = 1; v < p.V; ++v)
      if (z[v] > mx) mx = z[v], arg = v;
    double s = 0;
    for (int64_t v = 0; v < p.V; ++v) s += std::exp(z[v] - mx);
    const double lse = mx + std::log(s);
    r.stats.loss_sum += lse - z[p.y[t]];
    r.stats.count += 1;
    r.stats.correct += arg == p.y[t];
    for (int64_t v = 0; v < p.V; ++v) {
      const double pr = std::exp(z[v] - lse);
      r.stats.entropy_sum -= pr * (z[v] - lse);
      double g = scale * (pr - (v == p.y[t] ? 1.0 : 0.0));
      if (softcap > 0 && round_logits_to_bf16) {  // the bf16 gradients of · cap, tanh, / cap
        g = round_bf16(round_bf16(round_bf16(round_bf16(g) * softcap) * (1 - th[v] * th[v])) /
                       softcap);
      } else {
        if (softcap > 0) g *= 1 - (z[v] / softcap) * (z[v] / softcap);  // 1 − tanh²
        if (round_dz_to_bf16) g = round_bf16(g);
      }
      for (int64_t c = 0; c < p.C; ++c) {
        r.dx[t * p.C + c] += g * p.w[v * p.C + c];
        r.dw[v * p.C + c] += g * p.x[t * p.C + c];
      }
    }
  }
  return r;
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double a : v) m = std::max(m, std::fabs(a));
  return m;
}

template <typename T>
void expect_close(const std::vector<T>& got, const std::vector<double>& want, double rel,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size());
  const double tol = rel * std::max(1.0, max_abs(want));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(static_cast<double>(got[i]), want[i], tol) << what << " element " << i;
}

void expect_stats(const LmHeadStats& got, const LmHeadStats& want, double rel) {
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.correct, want.correct);
  EXPECT_NEAR(got.loss_sum, want.loss_sum, rel * std::max(1.0, std::fabs(want.loss_sum)));
  EXPECT_NEAR(got.entropy_sum, want.entropy_sum, rel * std::max(1.0, std::fabs(want.entropy_sum)));
}

template <typename T>
struct Outcome {
  LmHeadStats stats;
  std::vector<T> dx, dw, logits;
};

template <typename T>
Outcome<T> run(const Problem& p, T scale, const std::vector<double>& dw0, LmHeadWorkspace& ws,
               bool want_logits, T softcap = 0) {
  Outcome<T> r;
  const std::vector<T> x = cast<T>(p.x), w = cast<T>(p.w);
  r.dx.assign(p.T * p.C, T(7));  // overwritten, including unscored rows
  r.dw = cast<T>(dw0);
  if (want_logits) r.logits.assign(p.T * p.V, T(0));
  WorkspaceArena arena;
  test::give_lm_head_memory<T>(ws, arena, p.T, p.C, p.V);
  r.stats = lm_head_cross_entropy<T>(r.dx.data(), r.dw.data(),
                                     want_logits ? r.logits.data() : nullptr, x.data(), w.data(),
                                     p.y.data(), scale, p.T, p.C, p.V, ws, 0, nullptr, 0, softcap);
  return r;
}

std::vector<double> random_dw(int64_t n, uint64_t seed) {
  Rng rng(seed, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& a : v) a = rng.normal();
  return v;
}

TEST(LmHeadCe, DoubleMatchesFullLogitsReferenceAcrossChunkings) {
  const Problem p = make_problem(13, 6, 37, 1);
  const std::vector<double> dw0 = random_dw(p.V * p.C, 2);
  const double scale = 1.0 / 9;
  const Reference want = reference(p, scale, dw0);
  for (int64_t rows : {0, 1, 4, 13, 50})
    for (int64_t block : {0, 1, 5, 37}) {
      SCOPED_TRACE(testing::Message() << "rows_per_chunk " << rows << " vocab_block " << block);
      LmHeadWorkspace ws;
      ws.tuning.rows_per_chunk = rows;
      ws.tuning.vocab_block = block;
      const Outcome<double> got = run<double>(p, scale, dw0, ws, rows == 4);
      expect_stats(got.stats, want.stats, 1e-12);
      expect_close(got.dx, want.dx, 1e-12, "dx");
      expect_close(got.dw, want.dw, 1e-12, "dw");
      if (rows == 4) expect_close(got.logits, want.logits, 1e-12, "logits");
    }
}

TEST(LmHeadCe, FloatMatchesDouble) {
  const Problem p = make_problem(40, 16, 300, 3);
  const std::vector<double> dw0 = random_dw(p.V * p.C, 4);
  LmHeadWorkspace ws;
  ws.tuning.rows_per_chunk = 7;
  ws.tuning.vocab_block = 64;
  const Outcome<double> d = run<double>(p, 1.0 / 30, dw0, ws, false);
  const Outcome<float> f = run<float>(p, 1.0f / 30, dw0, ws, false);
  expect_stats(f.stats, d.stats, 1e-5);
  expect_close(f.dx, std::vector<double>(d.dx.begin(), d.dx.end()), 1e-5, "dx");
  expect_close(f.dw, std::vector<double>(d.dw.begin(), d.dw.end()), 1e-5, "dw");
}

// Scaled loss of the double path, statistics only.
double scaled_loss(const Problem& p, double scale, double softcap = 0) {
  LmHeadWorkspace ws;
  WorkspaceArena arena;
  test::give_lm_head_memory<double>(ws, arena, p.T, p.C, p.V);
  return scale * lm_head_cross_entropy<double>(nullptr, nullptr, nullptr, p.x.data(), p.w.data(),
                                               p.y.data(), 1.0, p.T, p.C, p.V, ws, 0, nullptr, 0,
                                               softcap)
                     .loss_sum;
}

// Gemma's final_logit_softcapping: the logits capped, cap · tanh(z / cap), in the statistics
// and the logits output, the gradients through 1 − tanh²; every chunking (one-row chunks keep
// the tanh in a row of their own, taller ones in half of Z), float against double, the fused
// gradients against finite differences, the chunked reference (lm_head_loss_*) the same.
// A cap of 1.5 on logits of spread ~3 bends most of them.
TEST(LmHeadCe, SoftcapMatchesTheFullLogitsReference) {
  const Problem p = make_problem(13, 6, 37, 11);
  const std::vector<double> dw0 = random_dw(p.V * p.C, 12);
  const double scale = 1.0 / 9, cap = 1.5;
  const Reference want = reference(p, scale, dw0, false, false, cap);
  const Reference plain = reference(p, scale, dw0);
  EXPECT_GT(std::fabs(want.stats.loss_sum - plain.stats.loss_sum), 0.1);  // the cap matters
  for (int64_t rows : {0, 1, 2, 3, 4, 13, 50})
    for (int64_t block : {0, 5}) {
      SCOPED_TRACE(testing::Message() << "rows_per_chunk " << rows << " vocab_block " << block);
      LmHeadWorkspace ws;
      ws.tuning.rows_per_chunk = rows;
      ws.tuning.vocab_block = block;
      const Outcome<double> got = run<double>(p, scale, dw0, ws, rows == 4, cap);
      expect_stats(got.stats, want.stats, 1e-12);
      expect_close(got.dx, want.dx, 1e-12, "dx");
      expect_close(got.dw, want.dw, 1e-12, "dw");
      if (rows == 4) expect_close(got.logits, want.logits, 1e-12, "logits");
    }
  LmHeadWorkspace ws;
  ws.tuning.rows_per_chunk = 3;
  const Outcome<float> f = run<float>(p, 1.0f / 9, dw0, ws, false, 1.5f);
  expect_stats(f.stats, want.stats, 1e-5);
  expect_close(f.dx, want.dx, 1e-5, "float dx");
  expect_close(f.dw, want.dw, 1e-5, "float dw");

  std::vector<double> ref_ws, dx(p.T * p.C), dw = dw0;
  const cpu::LossStats chunked = cpu::lm_head_loss_forward<double>(
      nullptr, p.x.data(), p.w.data(), p.y.data(), p.T, p.C, p.V, ref_ws, cap);
  EXPECT_NEAR(chunked.loss_sum, want.stats.loss_sum, 1e-12 * std::fabs(want.stats.loss_sum));
  EXPECT_EQ(chunked.correct, want.stats.correct);
  cpu::lm_head_loss_backward<double>(dx.data(), dw.data(), p.x.data(), p.w.data(), p.y.data(),
                                     scale, p.T, p.C, p.V, ref_ws, cap);
  expect_close(dx, want.dx, 1e-12, "reference dx");
  expect_close(dw, want.dw, 1e-12, "reference dw");
}

TEST(LmHeadCe, SoftcapGradientsMatchCentralFiniteDifferences) {
  Problem p = make_problem(4, 3, 5, 6, 0.0);
  p.y[1] = -1;
  const double scale = 0.37, h = 1e-5, cap = 0.8;
  LmHeadWorkspace ws;
  ws.tuning.rows_per_chunk = 3;
  const Outcome<double> g =
      run<double>(p, scale, std::vector<double>(p.V * p.C, 0.0), ws, false, cap);
  for (size_t i = 0; i < p.x.size(); ++i) {
    Problem a = p, b = p;
    a.x[i] += h;
    b.x[i] -= h;
    EXPECT_NEAR(g.dx[i], (scaled_loss(a, scale, cap) - scaled_loss(b, scale, cap)) / (2 * h), 1e-8)
        << "dx " << i;
  }
  for (size_t i = 0; i < p.w.size(); ++i) {
    Problem a = p, b = p;
    a.w[i] += h;
    b.w[i] -= h;
    EXPECT_NEAR(g.dw[i], (scaled_loss(a, scale, cap) - scaled_loss(b, scale, cap)) / (2 * h), 1e-8)
        << "dw " << i;
  }
}

TEST(LmHeadCe, GradientsMatchCentralFiniteDifferences) {
  Problem p = make_problem(4, 3, 5, 5, 0.0);
  p.y[2] = -1;
  const double scale = 0.37, h = 1e-5;
  LmHeadWorkspace ws;
  ws.tuning.rows_per_chunk = 2;
  ws.tuning.vocab_block = 2;
  const Outcome<double> g = run<double>(p, scale, std::vector<double>(p.V * p.C, 0.0), ws, false);
  for (size_t i = 0; i < p.x.size(); ++i) {
    Problem a = p, b = p;
    a.x[i] += h;
    b.x[i] -= h;
    EXPECT_NEAR(g.dx[i], (scaled_loss(a, scale) - scaled_loss(b, scale)) / (2 * h), 1e-8)
        << "dx " << i;
  }
  for (size_t i = 0; i < p.w.size(); ++i) {
    Problem a = p, b = p;
    a.w[i] += h;
    b.w[i] -= h;
    EXPECT_NEAR(g.dw[i], (scaled_loss(a, scale) - scaled_loss(b, scale)) / (2 * h), 1e-8)
        << "dw " << i;
  }
}

TEST(LmHeadCe, UnscoredRowsGiveZeroGradientAndNoStatistics) {
  Problem p = make_problem(6, 4, 11, 6, 0.0);
  p.y = {-1, 3, -1, -1, 10, -1};
  const std::vector<double> dw0 = random_dw(p.V * p.C, 7);
  LmHeadWorkspace ws;
  for (bool logits : {false, true}) {
    const Outcome<double> got = run<double>(p, 0.5, dw0, ws, logits);
    const Reference want = reference(p, 0.5, dw0);
    expect_stats(got.stats, want.stats, 1e-12);
    EXPECT_EQ(got.stats.count, 2);
    for (int64_t t : {0, 2, 3, 5})
      for (int64_t c = 0; c < p.C; ++c) EXPECT_EQ(got.dx[t * p.C + c], 0.0);
    expect_close(got.dw, want.dw, 1e-12, "dw");
  }
  p.y.assign(6, -1);  // nothing scored: dw untouched, dx zero
  const Outcome<double> none = run<double>(p, 0.5, dw0, ws, false);
  EXPECT_EQ(none.stats.count, 0);
  EXPECT_EQ(none.stats.loss_sum, 0.0);
  for (double v : none.dx) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(none.dw, dw0);
}

TEST(LmHeadCe, TiesCountTheFirstMaximumAsThePrediction) {
  // Vocabulary rows 1 and 3 are equal, so their logits tie exactly and are the maximum.
  Problem p{3, 2, 4, {1, 0, 1, 0, 1, 0}, {-1, 0, 2, 0, -1, 0, 2, 0}, {1, 1, 3}};
  LmHeadWorkspace ws;
  WorkspaceArena arena;
  test::give_lm_head_memory<double>(ws, arena, 3, 2, 4);
  const LmHeadStats s = lm_head_cross_entropy<double>(nullptr, nullptr, nullptr, p.x.data(),
                                                      p.w.data(), p.y.data(), 1.0, 3, 2, 4, ws);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.correct, 2);  // target 1 is the first max; target 3 ties but comes later
  const double lse = std::log(2 * std::exp(2.0) + 2 * std::exp(-1.0));
  EXPECT_NEAR(s.loss_sum, 3 * (lse - 2.0), 1e-14);
}

TEST(LmHeadCe, SingleRowAndLogitsOutput) {
  const Problem p = make_problem(1, 5, 9, 8, 0.0);
  const std::vector<double> dw0(p.V * p.C, 0.0);
  const Reference want = reference(p, 1.0, dw0);
  LmHeadWorkspace ws;
  const Outcome<double> got = run<double>(p, 1.0, dw0, ws, true);
  expect_stats(got.stats, want.stats, 1e-12);
  expect_close(got.logits, want.logits, 1e-12, "logits");
  expect_close(got.dx, want.dx, 1e-12, "dx");
  expect_close(got.dw, want.dw, 1e-12, "dw");
  // Logits of unscored rows are written too.
  Problem q = make_problem(3, 5, 9, 9, 0.0);
  q.y = {-1, -1, -1};
  const Reference wq = reference(q, 1.0, dw0);
  const Outcome<double> gq = run<double>(q, 1.0, dw0, ws, true);
  expect_close(gq.logits, wq.logits, 1e-12, "logits of unscored rows");
  EXPECT_EQ(gq.stats.count, 0);
}

// A problem rounded to bf16 (its double values are the bf16 ones) and its bf16 bits.
struct Bf16Problem {
  Problem p;
  std::vector<uint16_t> xb, wb;
};

Bf16Problem bf16_problem(Problem p) {
  Bf16Problem b;
  for (double& v : p.x) v = round_bf16(v), b.xb.push_back(f32_to_bf16(static_cast<float>(v)));
  for (double& v : p.w) v = round_bf16(v), b.wb.push_back(f32_to_bf16(static_cast<float>(v)));
  b.p = std::move(p);
  return b;
}

// The bf16 kernel with chunks of `rows` and vocabulary blocks of `block` (0: its defaults).
Outcome<float> run_bf16(const Bf16Problem& b, double scale, const std::vector<double>& dw0,
                        int64_t rows, int64_t block, double softcap = 0) {
  const Problem& p = b.p;
  LmHeadWorkspace ws;
  ws.tuning.rows_per_chunk = rows;
  ws.tuning.vocab_block = block;
  WorkspaceArena arena;
  test::give_lm_head_memory<uint16_t>(ws, arena, p.T, p.C, p.V);
  Outcome<float> r;
  r.dx.assign(p.T * p.C, 3.0f);
  r.dw = cast<float>(dw0);
  r.stats = lm_head_cross_entropy_bf16(r.dx.data(), r.dw.data(), b.xb.data(), b.wb.data(),
                                       p.y.data(), static_cast<float>(scale), p.T, p.C, p.V, ws, 0,
                                       nullptr, 0, static_cast<float>(softcap));
  return r;
}

// The bf16 path rounds what autocast rounds: the logits (the lm_head's bf16 output, widened for
// the loss) and the dlogits (the bf16 gradient of that output). Run with the default layout
// (every row in one chunk) and with small chunks and vocabulary blocks forced.
TEST(LmHeadCe, Bf16MatchesAReferenceThatRoundsLogitsAndDlogits) {
  const Bf16Problem b = bf16_problem(make_problem(24, 32, 200, 10));
  const Problem& p = b.p;
  const std::vector<double> dw0 = random_dw(p.V * p.C, 11);
  const double scale = 1.0 / 17;
  const Reference want = reference(p, scale, dw0, true, true);
  const Reference fp32_logits = reference(p, scale, dw0, true, false);
  const Reference fp32_dlogits = reference(p, scale, dw0, false, true);
  for (const auto& [rows, block] : {std::pair<int64_t, int64_t>{0, 0}, {5, 48}}) {
    SCOPED_TRACE(testing::Message() << "rows_per_chunk " << rows << " vocab_block " << block);
    const Outcome<float> got = run_bf16(b, scale, dw0, rows, block);
    const LmHeadStats& s = got.stats;
    const std::vector<float>&dx = got.dx, &dw = got.dw;
    // Statistics: fp32 exp and sums of the same bf16 logits against double. The fp32 product
    // may round a logit to the neighbouring bf16 value where the double one does not (a few
    // in 10^5); 1e-5 of the loss covers that, while unrounded logits are off by ~2e-4.
    expect_stats(s, want.stats, 1e-5);
    EXPECT_GT(std::fabs(fp32_logits.stats.loss_sum - want.stats.loss_sum),
              1e-5 * std::fabs(want.stats.loss_sum));
    // Gradients: fp32 vs double softmax may move a dlogit across a bf16 rounding boundary (one
    // bf16 ulp, 2^-8 relative, on a few of them); 1e-4 of the largest entry covers that, while
    // skipping the rounding altogether (the unrounded reference) is off by ~1e-3.
    expect_close(dx, want.dx, 1e-4, "dx");
    expect_close(dw, want.dw, 1e-4, "dw");
  }
  double dx_gap = 0;
  for (size_t i = 0; i < want.dx.size(); ++i)
    dx_gap = std::max(dx_gap, std::fabs(want.dx[i] - fp32_dlogits.dx[i]));
  EXPECT_GT(dx_gap, 1e-4 * max_abs(want.dx));  // the test can tell rounded from unrounded
}

// A model sizes its head's workspace once, with logits when it may be asked for them, and
// then also runs the fused bf16 kernel (a step without logits) in it: the size with logits
// covers that kernel on either bf16 path (the widened one holds fp32 copies of its operands).
TEST(LmHeadCe, Bf16WorkspaceWithLogitsCoversTheFusedKernel) {
  for (const auto& [T, C, V] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 8, 300}, {24, 32, 200}, {100, 64, 5000}}) {
    SCOPED_TRACE(testing::Message() << "T " << T << " C " << C << " V " << V);
    const size_t with_logits = lm_head_workspace_bytes(
        {.dtype = DType::kBF16, .rows = T, .hidden = C, .vocab = V, .logits = true});
    EXPECT_GE(with_logits, lm_head_kernel_workspace_bytes<uint16_t>(T, C, V, false));
  }
}

// Gemma 2's final_logit_softcapping under autocast: transformers caps the bf16 logits with three
// bf16 tensor ops (/ cap, tanh, · cap), each rounded, and their backward rounds each gradient.
// The bf16 path against a reference doing exactly that, whole and in small chunks and blocks,
// and through the view-level op; a cap in fp32 on the bf16 logits (no intermediate rounding) is
// measurably different, so the test tells the two apart.
TEST(LmHeadCe, Bf16SoftcapRoundsEachOpAsAutocastDoes) {
  const Bf16Problem b = bf16_problem(make_problem(24, 32, 200, 12));
  const Problem& p = b.p;
  const std::vector<double> dw0 = random_dw(p.V * p.C, 13);
  const double scale = 1.0 / 17, cap = 3.0;
  const Reference want = reference(p, scale, dw0, true, true, cap);
  for (const auto& [rows, block] : {std::pair<int64_t, int64_t>{0, 0}, {5, 48}}) {
    SCOPED_TRACE(testing::Message() << "rows_per_chunk " << rows << " vocab_block " << block);
    const Outcome<float> got = run_bf16(b, scale, dw0, rows, block, cap);
    const LmHeadStats& s = got.stats;
    const std::vector<float>&dx = got.dx, &dw = got.dw;
    // Tolerances as the uncapped bf16 test's: a value next to a bf16 rounding boundary may land
    // on its neighbour between the fp32 kernel and the double reference.
    expect_stats(s, want.stats, 1e-5);
    expect_close(dx, want.dx, 1e-4, "dx");
    expect_close(dw, want.dw, 1e-4, "dw");
  }
  // The cap in full precision on the bf16 logits: another loss.
  double loss = 0;
  for (int64_t t = 0; t < p.T; ++t) {
    if (p.y[t] < 0) continue;
    std::vector<double> z(p.V, 0.0);
    for (int64_t v = 0; v < p.V; ++v) {
      for (int64_t c = 0; c < p.C; ++c) z[v] += p.x[t * p.C + c] * p.w[v * p.C + c];
      z[v] = cap * std::tanh(round_bf16(z[v]) / cap);
    }
    double mx = *std::max_element(z.begin(), z.end()), sum = 0;
    for (double a : z) sum += std::exp(a - mx);
    loss += mx + std::log(sum) - z[p.y[t]];
  }
  EXPECT_GT(std::fabs(loss - want.stats.loss_sum), 1e-5 * std::fabs(want.stats.loss_sum));
}

TEST(LmHeadCe, FloatReproducesTodaysChunkedLossForwardAndBackward) {
  const Problem p = make_problem(70, 24, 1000, 12);
  const std::vector<float> x = cast<float>(p.x), w = cast<float>(p.w);
  std::vector<float> scratch, dx_old(p.T * p.C), dw_old(p.V * p.C, 0.0f);
  const cpu::LossStats old = cpu::lm_head_loss_forward<float>(nullptr, x.data(), w.data(),
                                                              p.y.data(), p.T, p.C, p.V, scratch);
  const float scale = 1.0f / static_cast<float>(old.count);
  cpu::lm_head_loss_backward<float>(dx_old.data(), dw_old.data(), x.data(), w.data(), p.y.data(),
                                    scale, p.T, p.C, p.V, scratch);
  LmHeadWorkspace ws;
  const Outcome<float> got = run<float>(p, scale, std::vector<double>(p.V * p.C, 0.0), ws, false);
  EXPECT_EQ(got.stats.count, old.count);
  EXPECT_EQ(got.stats.correct, old.correct);
  EXPECT_NEAR(got.stats.loss_sum, old.loss_sum, 1e-6 * std::fabs(old.loss_sum));
  EXPECT_NEAR(got.stats.entropy_sum, old.entropy_sum, 1e-6 * std::fabs(old.entropy_sum));
  expect_close(got.dx, std::vector<double>(dx_old.begin(), dx_old.end()), 1e-6, "dx");
  expect_close(got.dw, std::vector<double>(dw_old.begin(), dw_old.end()), 1e-6, "dw");
}

TEST(LmHeadCe, RerunsAreBitIdentical) {
  const Problem p = make_problem(33, 16, 500, 13);
  const std::vector<double> dw0 = random_dw(p.V * p.C, 14);
  LmHeadWorkspace ws;
  ws.tuning.rows_per_chunk = 8;
  ws.tuning.vocab_block = 100;
  const Outcome<float> a = run<float>(p, 0.1f, dw0, ws, true);
  const Outcome<float> b = run<float>(p, 0.1f, dw0, ws, true);  // reused (grown) workspace
  LmHeadWorkspace fresh;
  fresh.tuning.rows_per_chunk = 8;
  fresh.tuning.vocab_block = 100;
  const Outcome<float> c = run<float>(p, 0.1f, dw0, fresh, true);
  for (const Outcome<float>* r : {&b, &c}) {
    EXPECT_EQ(r->stats.loss_sum, a.stats.loss_sum);
    EXPECT_EQ(r->stats.entropy_sum, a.stats.entropy_sum);
    EXPECT_EQ(r->stats.correct, a.stats.correct);
    EXPECT_EQ(r->dx, a.dx);
    EXPECT_EQ(r->dw, a.dw);
    EXPECT_EQ(r->logits, a.logits);
  }
}

TEST(LmHeadCe, TargetOutsideTheVocabularyFails) {
  Problem p = make_problem(2, 2, 3, 15);
  p.y = {0, 3};
  LmHeadWorkspace ws;
  WorkspaceArena arena;
  test::give_lm_head_memory<double>(ws, arena, 2, 2, 3);
  EXPECT_THROW(lm_head_cross_entropy<double>(nullptr, nullptr, nullptr, p.x.data(), p.w.data(),
                                             p.y.data(), 1.0, 2, 2, 3, ws),
               Error);
}

}  // namespace
}  // namespace sft::ops
