// ops::lm_head_cross_entropy on a vocabulary shard (tensor parallelism) against the whole head:
// T = 2 and 4 ranks of a thread ShardGroup (tests/thread_shard_group.h), V = 64, C = 16, 40 rows
// with unscored ones. Each rank's statistics and dx must be the whole head's and bit-identical
// across ranks, its dw the whole dw's block; f32, bf16 and f64; ties of the maximum across and
// within slices (the first maximum over the whole vocabulary counts); chunk edges; no scored
// row; the refusals, on every rank alike.
//
// Tolerances (max |err| / max |whole|): f32 1e-6 (only the order of the exp sums differs: each
// slice sums its own lanes, then the group adds them); bf16 statistics 1e-6, dx and dw 1e-2 as
// the bf16 conformance tests (a dlogit one ulp away may round to another bf16); f64 1e-12.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/rng.h"
#include "ops/lm_head_ce.h"
#include "ops/ops.h"
#include "test_workspace.h"
#include "thread_shard_group.h"

namespace sft::ops {
namespace {

using sft::testing::ThreadShardGroups;

struct Head {
  int64_t T, C, V;
  std::vector<double> x, w, dw0;
  std::vector<int64_t> y;
};

Head make_head(int64_t T, int64_t C, int64_t V, uint64_t seed) {
  Rng rng(seed);
  Head h{T, C, V, {}, {}, {}, {}};
  for (int64_t i = 0; i < T * C; ++i) h.x.push_back(rng.normal());
  for (int64_t i = 0; i < V * C; ++i) h.w.push_back(0.5 * rng.normal());
  for (int64_t i = 0; i < V * C; ++i) h.dw0.push_back(0x1p-10 * rng.normal());
  for (int64_t t = 0; t < T; ++t)
    h.y.push_back(t % 6 == 4 ? -1 : static_cast<int64_t>(rng.below(static_cast<uint64_t>(V))));
  return h;
}

// x (T, C) = e₀ per row and w[v] = (level[v], 0, ...): the logits are exactly level[v], with
// the maximum 3 at the ids in `maxima`.
Head tie_head(const std::vector<int64_t>& maxima, const std::vector<int64_t>& targets) {
  Head h = make_head(static_cast<int64_t>(targets.size()), 16, 64, 11);
  for (int64_t t = 0; t < h.T; ++t)
    for (int64_t e = 0; e < h.C; ++e) h.x[t * h.C + e] = e == 0 ? 1.0 : 0.0;
  for (int64_t v = 0; v < h.V; ++v) {
    for (int64_t e = 1; e < h.C; ++e) h.w[v * h.C + e] = 0;
    if (std::find(maxima.begin(), maxima.end(), v) != maxima.end()) h.w[v * h.C] = 3;
  }
  h.y = targets;
  return h;
}

// A head's tensors in one dtype: f32 and f64 values, bf16 bits; gradients in f32 (f64 for f64).
struct Buf {
  DType dtype;
  std::vector<float> f;
  std::vector<double> d;
  std::vector<uint16_t> b;
  Buf(DType dt, const double* v, int64_t n) : dtype(dt) {
    for (int64_t i = 0; i < n; ++i) {
      if (dt == DType::kF64) d.push_back(v[i]);
      if (dt == DType::kF32) f.push_back(static_cast<float>(v[i]));
      if (dt == DType::kBF16) b.push_back(f32_to_bf16(static_cast<float>(v[i])));
    }
  }
  View view(int64_t rows, int64_t cols) {
    if (dtype == DType::kF64) return view_of(d.data(), rows, cols);
    if (dtype == DType::kBF16) return view_of(b.data(), rows, cols);
    return view_of(f.data(), rows, cols);
  }
  std::vector<double> values() const {
    if (dtype == DType::kF64) return d;
    if (dtype == DType::kF32) return std::vector<double>(f.begin(), f.end());
    std::vector<double> out;
    for (uint16_t u : b) out.push_back(bf16_to_f32(u));
    return out;
  }
};

DType grad_dtype(DType dt) {
  return dt == DType::kF64 ? DType::kF64 : DType::kF32;
}

struct Result {
  LmHeadStats stats;
  std::vector<double> dx, dw;  // dw: this rank's rows
};

// The rows [v0, v0 + n) of the head's w or dw0.
Result run_rows(const Head& h, DType dt, double scale, bool grads, int64_t v0, int64_t n,
                VocabShard shard, double softcap = 0) {
  Buf x(dt, h.x.data(), h.T * h.C), w(dt, h.w.data() + v0 * h.C, n * h.C);
  Buf dx(grad_dtype(dt), std::vector<double>(h.T * h.C, NAN).data(), h.T * h.C);
  Buf dw(grad_dtype(dt), h.dw0.data() + v0 * h.C, n * h.C);
  Result r;
  WorkspaceArena arena;  // each rank's own
  const Workspace ws = test::lm_head_workspace(arena, x.view(h.T, h.C), w.view(n, h.C), false,
                                               shard.group != nullptr);
  r.stats = lm_head_cross_entropy(grads ? dx.view(h.T, h.C) : View{},
                                  grads ? dw.view(n, h.C) : View{}, View{}, x.view(h.T, h.C),
                                  w.view(n, h.C), h.y.data(), scale, ws, shard, softcap);
  if (grads) r.dx = dx.values(), r.dw = dw.values();
  return r;
}

Result run_whole(const Head& h, DType dt, double scale, bool grads = true, double softcap = 0) {
  return run_rows(h, dt, scale, grads, 0, h.V, {}, softcap);
}

std::vector<Result> run_sharded(const Head& h, int ranks, DType dt, double scale, bool grads = true,
                                double softcap = 0) {
  std::vector<Result> out(static_cast<size_t>(ranks));
  const int64_t rows = h.V / ranks;
  ThreadShardGroups::run(ranks, [&](ShardGroup& g) {
    const int64_t begin = g.rank() * rows;
    out[static_cast<size_t>(g.rank())] =
        run_rows(h, dt, scale, grads, begin, rows, VocabShard{begin, &g}, softcap);
  });
  return out;
}

double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    err = std::max(err, std::fabs(got[i] - want[i]));
    if (std::isnan(got[i]) != std::isnan(want[i])) err = INFINITY;
    ref = std::max(ref, std::fabs(want[i]));
  }
  return ref > 0 ? err / ref : err;
}

std::vector<double> block(const std::vector<double>& v, int64_t begin, int64_t n) {
  return std::vector<double>(v.begin() + begin, v.begin() + begin + n);
}

// dw − dw0 over the rows [v0, v0 + n): the gradient itself, so the start does not hide it.
std::vector<double> gained(const std::vector<double>& dw, const Head& h, int64_t v0) {
  std::vector<double> g = dw;
  for (size_t i = 0; i < g.size(); ++i) g[i] -= h.dw0[static_cast<size_t>(v0 * h.C) + i];
  return g;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

bool same_stats(const LmHeadStats& a, const LmHeadStats& b) {
  return a.count == b.count && a.correct == b.correct &&
         std::memcmp(&a.loss_sum, &b.loss_sum, sizeof(double)) == 0 &&
         std::memcmp(&a.entropy_sum, &b.entropy_sum, sizeof(double)) == 0;
}

// Every rank against the whole head, and the ranks against each other.
void expect_sharded_matches(const Head& h, DType dt, int ranks, double stat_tol, double grad_tol,
                            bool grads = true, double softcap = 0) {
  SCOPED_TRACE(std::string(dtype_name(dt)) + ", " + std::to_string(ranks) + " ranks" +
               (grads ? "" : ", statistics only") +
               (softcap > 0 ? ", softcap " + std::to_string(softcap) : ""));
  const double scale = 1.0 / 29;
  const Result whole = run_whole(h, dt, scale, grads, softcap);
  const std::vector<Result> shards = run_sharded(h, ranks, dt, scale, grads, softcap);
  const int64_t rows = h.V / ranks;
  for (int r = 0; r < ranks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const Result& s = shards[static_cast<size_t>(r)];
    EXPECT_EQ(s.stats.count, whole.stats.count);
    EXPECT_EQ(s.stats.correct, whole.stats.correct);
    EXPECT_LE(relative_error({s.stats.loss_sum}, {whole.stats.loss_sum}), stat_tol);
    EXPECT_LE(relative_error({s.stats.entropy_sum}, {whole.stats.entropy_sum}), stat_tol);
    EXPECT_TRUE(same_stats(s.stats, shards[0].stats)) << "statistics differ across ranks";
    if (!grads) continue;
    EXPECT_LE(relative_error(s.dx, whole.dx), grad_tol);
    EXPECT_TRUE(same_bits(s.dx, shards[0].dx)) << "dx differs across ranks";
    const int64_t v0 = r * rows;
    EXPECT_LE(
        relative_error(gained(s.dw, h, v0), gained(block(whole.dw, v0 * h.C, rows * h.C), h, v0)),
        grad_tol);
  }
}

TEST(LmHeadShard, F32MatchesTheWholeHead) {
  const Head h = make_head(40, 16, 64, 1);
  for (int ranks : {2, 4}) {
    expect_sharded_matches(h, DType::kF32, ranks, 1e-6, 1e-6);
    expect_sharded_matches(h, DType::kF32, ranks, 1e-6, 1e-6, false);
  }
}

TEST(LmHeadShard, Bf16MatchesTheWholeHead) {
  const Head h = make_head(40, 16, 64, 2);
  for (int ranks : {2, 4}) expect_sharded_matches(h, DType::kBF16, ranks, 1e-6, 1e-2);
}

// Gemma 2's final-logit soft-cap: a shard caps its slice as the whole head caps every logit
// (bf16: autocast's rounded / cap, tanh, · cap and their gradients).
TEST(LmHeadShard, SoftcappedMatchesTheWholeHead) {
  const Head h = make_head(40, 16, 64, 4);
  for (int ranks : {2, 4}) {
    expect_sharded_matches(h, DType::kF32, ranks, 1e-6, 1e-6, true, 1.5);
    expect_sharded_matches(h, DType::kBF16, ranks, 1e-6, 1e-2, true, 1.5);
  }
}

TEST(LmHeadShard, F64MatchesTheWholeHead) {
  const Head h = make_head(40, 16, 64, 3);
  for (int ranks : {2, 4}) expect_sharded_matches(h, DType::kF64, ranks, 1e-12, 1e-12);
}

// A vocabulary as large as a chunk's rows of fp32 would make the 8-lane sums and 16-lane maxima
// run over whole bodies and tails on every slice.
TEST(LmHeadShard, F32LargerVocabulary) {
  const Head h = make_head(37, 24, 1000, 4);
  for (int ranks : {2, 4}) expect_sharded_matches(h, DType::kF32, ranks, 1e-6, 1e-6);
}

// correct = (the first maximum over the whole vocabulary is the target), whichever slices hold
// the maxima: T = 2 has 32 ids per slice, T = 4 has 16.
TEST(LmHeadShard, TiesCountTheFirstMaximumOverTheWholeVocabulary) {
  struct Case {
    std::vector<int64_t> maxima, targets;
    int64_t correct;  // rows whose target is the first maximum
  };
  const Case cases[] = {
      // maxima in slice 0 and (T = 2: 1, T = 4: 2), two adjacent in the later slice
      {{5, 40, 41}, {5, 40, 41, 7, 5, -1, 63, 0}, 2},
      // the first maximum is not in slice 0; one after it in the same slice
      {{40, 41}, {40, 41, 40, 3, -1, 41}, 2},
      // maxima at the first id of slices (T = 4: 16 and 48)
      {{16, 48}, {16, 48, 15, 17, 47}, 1},
      // a maximum at id 0 and at the last id
      {{0, 63}, {0, 63, 62, 1}, 1},
  };
  for (const Case& c : cases) {
    const Head h = tie_head(c.maxima, c.targets);
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF64}) {
      EXPECT_EQ(run_whole(h, dt, 0.5).stats.correct, c.correct) << dtype_name(dt);
      for (int ranks : {2, 4}) {
        const std::vector<Result> shards = run_sharded(h, ranks, dt, 0.5);
        for (const Result& s : shards)
          EXPECT_EQ(s.stats.correct, c.correct)
              << dtype_name(dt) << ", " << ranks << " ranks, maxima at " << c.maxima[0];
      }
      expect_sharded_matches(h, dt, 2, 1e-6, dt == DType::kBF16 ? 1e-2 : 1e-6);
      expect_sharded_matches(h, dt, 4, 1e-6, dt == DType::kBF16 ? 1e-2 : 1e-6);
    }
  }
}

// A vocabulary that does not divide by the ranks (the padded split, model/tensor_parallel.h):
// each rank holds ceil(V / T) rows, those past V padding. Filled with large values here, the
// padding must stay outside the softmax and the argmax and get no gradient, so every rank
// still returns the whole head's statistics and dx, and dw its real rows' block. V = 61 over
// 2 (rank 1: 30 real, 1 padding) and 4 (rank 3: 13 real, 3 padding); V = 5 over 4 leaves
// rank 3 nothing but padding.
TEST(LmHeadShard, APaddedSplitMatchesTheWholeHead) {
  for (const int64_t V : {int64_t{61}, int64_t{5}}) {
    const Head h = make_head(40, 16, V, 9);
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF64}) {
      const double scale = 1.0 / 29;
      const Result whole = run_whole(h, dt, scale);
      for (int ranks : {2, 4}) {
        SCOPED_TRACE("V " + std::to_string(V) + ", " + std::string(dtype_name(dt)) + ", " +
                     std::to_string(ranks) + " ranks");
        const int64_t rows = (V + ranks - 1) / ranks;
        std::vector<Result> shards(static_cast<size_t>(ranks));
        ThreadShardGroups::run(ranks, [&](ShardGroup& g) {
          const int64_t begin = g.rank() * rows, real = std::clamp<int64_t>(V - begin, 0, rows);
          std::vector<double> w(static_cast<size_t>(rows * h.C), 40.0), dw0(w.size(), 0.25);
          std::copy_n(h.w.begin() + begin * h.C, real * h.C, w.begin());
          std::copy_n(h.dw0.begin() + begin * h.C, real * h.C, dw0.begin());
          Buf x(dt, h.x.data(), h.T * h.C), wb(dt, w.data(), rows * h.C);
          Buf dx(grad_dtype(dt), std::vector<double>(h.T * h.C, NAN).data(), h.T * h.C);
          Buf dw(grad_dtype(dt), dw0.data(), rows * h.C);
          WorkspaceArena arena;
          const Workspace ws =
              test::lm_head_workspace(arena, x.view(h.T, h.C), wb.view(rows, h.C), false, true);
          Result& r = shards[static_cast<size_t>(g.rank())];
          r.stats = lm_head_cross_entropy(dx.view(h.T, h.C), dw.view(rows, h.C), View{},
                                          x.view(h.T, h.C), wb.view(rows, h.C), h.y.data(), scale,
                                          ws, VocabShard{begin, &g, V});
          r.dx = dx.values();
          r.dw = dw.values();
          // The padding rows' gradient is untouched.
          const std::vector<double> start = Buf(grad_dtype(dt), dw0.data(), rows * h.C).values();
          for (int64_t k = real * h.C; k < rows * h.C; ++k)
            ASSERT_EQ(r.dw[size_t(k)], start[size_t(k)]) << "padding row " << begin + k / h.C;
          r.dw.resize(static_cast<size_t>(real * h.C));
        });
        const double tol = dt == DType::kBF16 ? 1e-2 : dt == DType::kF64 ? 1e-12 : 1e-6;
        for (int q = 0; q < ranks; ++q) {
          const Result& s = shards[static_cast<size_t>(q)];
          EXPECT_EQ(s.stats.count, whole.stats.count);
          EXPECT_EQ(s.stats.correct, whole.stats.correct);
          EXPECT_LE(relative_error({s.stats.loss_sum}, {whole.stats.loss_sum}), 1e-6);
          EXPECT_LE(relative_error({s.stats.entropy_sum}, {whole.stats.entropy_sum}), 1e-6);
          EXPECT_TRUE(same_stats(s.stats, shards[0].stats)) << "statistics differ across ranks";
          EXPECT_LE(relative_error(s.dx, whole.dx), tol);
          const int64_t begin = q * rows, real = static_cast<int64_t>(s.dw.size()) / h.C;
          if (real == 0) continue;
          EXPECT_LE(relative_error(gained(s.dw, h, begin),
                                   gained(block(whole.dw, begin * h.C, real * h.C), h, begin)),
                    tol);
        }
      }
    }
  }
}

// The raw kernels with small chunks (rows_per_chunk 7 over 40 rows: five chunks, one short), a
// workspace per rank, against the whole head chunked the same way.
TEST(LmHeadShard, ChunkEdgesAndPerRankWorkspaces) {
  const Head h = make_head(40, 16, 64, 5);
  const std::vector<float> x(h.x.begin(), h.x.end()), w(h.w.begin(), h.w.end());
  const float scale = 1.0f / 31;
  LmHeadWorkspace ws;
  ws.tuning.rows_per_chunk = 7;
  WorkspaceArena arena;
  test::give_lm_head_memory<float>(ws, arena, h.T, h.C, h.V);
  std::vector<float> dx(h.T * h.C), dw(h.V * h.C, 0.0f);
  const LmHeadStats whole = lm_head_cross_entropy<float>(
      dx.data(), dw.data(), nullptr, x.data(), w.data(), h.y.data(), scale, h.T, h.C, h.V, ws);
  for (int ranks : {2, 4}) {
    const int64_t rows = h.V / ranks;
    std::vector<LmHeadStats> stats(static_cast<size_t>(ranks));
    std::vector<std::vector<float>> dxs(static_cast<size_t>(ranks)),
        dws(static_cast<size_t>(ranks));
    ThreadShardGroups::run(ranks, [&](ShardGroup& g) {
      const size_t r = static_cast<size_t>(g.rank());
      LmHeadWorkspace mine;
      mine.tuning.rows_per_chunk = 7;
      WorkspaceArena own;
      test::give_lm_head_memory<float>(mine, own, h.T, h.C, rows, true);
      dxs[r].assign(h.T * h.C, NAN);
      dws[r].assign(rows * h.C, 0.0f);
      stats[r] = lm_head_cross_entropy<float>(dxs[r].data(), dws[r].data(), nullptr, x.data(),
                                              w.data() + r * rows * h.C, h.y.data(), scale, h.T,
                                              h.C, rows, mine, int64_t(r) * rows, &g);
    });
    for (int r = 0; r < ranks; ++r) {
      SCOPED_TRACE(std::to_string(ranks) + " ranks, rank " + std::to_string(r));
      const size_t q = static_cast<size_t>(r);
      EXPECT_EQ(stats[q].count, whole.count);
      EXPECT_EQ(stats[q].correct, whole.correct);
      EXPECT_NEAR(stats[q].loss_sum, whole.loss_sum, 1e-6 * std::fabs(whole.loss_sum));
      EXPECT_NEAR(stats[q].entropy_sum, whole.entropy_sum, 1e-6 * std::fabs(whole.entropy_sum));
      EXPECT_EQ(dxs[q], dxs[0]);
      EXPECT_LE(relative_error(std::vector<double>(dxs[q].begin(), dxs[q].end()),
                               std::vector<double>(dx.begin(), dx.end())),
                1e-6);
      EXPECT_LE(relative_error(std::vector<double>(dws[q].begin(), dws[q].end()),
                               std::vector<double>(dw.begin() + r * rows * h.C,
                                                   dw.begin() + (r + 1) * rows * h.C)),
                1e-6);
    }
  }
}

TEST(LmHeadShard, RerunsAreBitIdentical) {
  const Head h = make_head(40, 16, 64, 6);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const std::vector<Result> a = run_sharded(h, 4, dt, 0.1), b = run_sharded(h, 4, dt, 0.1);
    for (size_t r = 0; r < a.size(); ++r) {
      EXPECT_TRUE(same_stats(a[r].stats, b[r].stats));
      EXPECT_TRUE(same_bits(a[r].dx, b[r].dx));
      EXPECT_TRUE(same_bits(a[r].dw, b[r].dw));
    }
  }
}

// No scored row: every rank returns zeros without meeting (the rows are the same everywhere).
TEST(LmHeadShard, NoScoredRow) {
  Head h = make_head(5, 16, 64, 7);
  h.y.assign(5, -1);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const std::vector<double> dw0 = Buf(DType::kF32, h.dw0.data(), h.V * h.C).values();
    const std::vector<Result> shards = run_sharded(h, 2, dt, 1.0);
    for (int64_t r = 0; r < 2; ++r) {
      const Result& s = shards[static_cast<size_t>(r)];
      EXPECT_EQ(s.stats.count, 0);
      EXPECT_EQ(s.stats.loss_sum, 0);
      EXPECT_EQ(s.dx, std::vector<double>(h.T * h.C, 0.0));
      EXPECT_EQ(s.dw, block(dw0, r * 32 * h.C, 32 * h.C));
    }
  }
}

// What a shard refuses, refused on every rank before any collective (so the others never wait).
TEST(LmHeadShard, RefusalsOnEveryRank) {
  const Head h = make_head(6, 16, 64, 8);
  const std::vector<float> x(h.x.begin(), h.x.end()), w(h.w.begin(), h.w.end());
  auto expect_refused = [&](const char* what, int64_t begin_step, int64_t begin_offset, bool logits,
                            std::vector<int64_t> y) {
    std::vector<int> refused(2, 0);
    ThreadShardGroups::run(2, [&](ShardGroup& g) {
      std::vector<float> lg(h.T * 32), dx(h.T * h.C);
      WorkspaceArena arena;
      const View xv = view_of(x.data(), h.T, h.C), wv = view_of(w.data(), 32, h.C);
      try {
        lm_head_cross_entropy(view_of(dx.data(), h.T, h.C), View{},
                              logits ? view_of(lg.data(), h.T, 32) : View{}, xv, wv, y.data(), 1.0,
                              test::lm_head_workspace(arena, xv, wv, false, true),
                              VocabShard{g.rank() * begin_step + begin_offset, &g});
      } catch (const Error&) {
        refused[static_cast<size_t>(g.rank())] = 1;
      }
    });
    EXPECT_EQ(refused, std::vector<int>({1, 1})) << what;
  };
  expect_refused("logits", 32, 0, true, h.y);
  expect_refused("rows past the split", 32, 40, false, h.y);
  expect_refused("negative begin", 32, -40, false, h.y);
  std::vector<int64_t> y = h.y;
  y[2] = 64;  // the whole vocabulary's size: outside every slice
  expect_refused("target past the vocabulary", 32, 0, false, y);
}

}  // namespace
}  // namespace sft::ops
