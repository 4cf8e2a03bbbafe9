// Conformance of ops::lm_head_cross_entropy on views (fused LM head + cross-entropy): the
// statistics, dx, dw and the optional logits, with f32 and with bf16 x and w, against the f64 CPU
// run on the same values; the f64 gradients against f64 central finite differences of
// scale · loss_sum. Cases: T = 1, V = 1, unscored rows (-1), no scored row at all, evaluation
// (no gradients), exact ties of the argmax (the first maximum counts), vocabularies of ~2k.
//
// Tolerances (max |err| / max |ref|):
//   f32:  loss_sum, entropy_sum, dx, dw, logits 1e-5; count and correct exact.
//   bf16: logits 1e-5 (bf16 products are exact in fp32, fp32 accumulation); loss_sum,
//         entropy_sum 1e-3 (the logits may be rounded to bf16 before the softmax, as autocast's
//         bf16 lm_head output is: 2⁻⁹ relative per logit, which the sums mostly average out);
//         dx, dw 1e-2 (dlogits may be rounded to bf16 before the two products, as torch's
//         autocast does); count and correct exact.
// Statistics and logits also against the full f64 logits written out in this file (1e-5 f32,
// bf16 as above, 1e-12 f64).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "conformance.h"
#include "test_workspace.h"

namespace sft::conformance {
namespace {

struct LmHeadCase {
  std::string name;
  int64_t C, V;
  std::vector<int64_t> targets;  // one per row
  double scale;
  bool gradients, logits;
  bool ties = false;  // logits are exact: w[2] = w[4] is the largest row, x · w[v] = w[v][0]
};

// x (T, C) and w (V, C) of a case on the grid.
void lm_head_inputs(const LmHeadCase& c, DType grid, Values* x, Values* w) {
  const int64_t T = static_cast<int64_t>(c.targets.size());
  *x = random_values(T * c.C, 1, 1.0, grid);
  *w = random_values(c.V * c.C, 2, 0.3, grid);
  if (!c.ties) return;
  for (int64_t t = 0; t < T; ++t) (*x)[t * c.C] = 1;
  for (int64_t v = 0; v < c.V; ++v) {
    for (int64_t e = 1; e < c.C; ++e) (*w)[v * c.C + e] = 0;
    if (v == 2 || v == 4) (*w)[v * c.C] = 3;
  }
}

Outputs run_lm_head(const LmHeadCase& c, const Backend& be, Mode m) {
  const int64_t T = static_cast<int64_t>(c.targets.size());
  const DType out = m.dtype == DType::kBF16 ? DType::kF32 : m.dtype;
  Values x, w;
  lm_head_inputs(c, m.grid, &x, &w);
  IdBuffer targets(be, c.targets);
  Buffer X(be, m.dtype, T, c.C, x), W(be, m.dtype, c.V, c.C, w);
  Buffer DX(be, out, T, c.C, Values(T * c.C, kNaN));
  Buffer DW(be, out, c.V, c.C, random_values(c.V * c.C, 3, kAccumulateStart, DType::kF32));
  Buffer L(be, out, T, c.V, Values(T * c.V, kNaN));
  ops::WorkspaceArena arena;
  const ops::LmHeadStats s = ops::lm_head_cross_entropy(
      c.gradients ? DX.view() : View{}, c.gradients ? DW.view() : View{},
      c.logits ? L.view() : View{}, X.view(), W.view(), targets.data(), c.scale,
      test::lm_head_workspace(arena, X.view(), W.view(), c.logits));
  Outputs o = {{"loss_sum", {s.loss_sum}},
               {"entropy_sum", {s.entropy_sum}},
               {"count", {double(s.count)}},
               {"correct", {double(s.correct)}}};
  if (c.gradients) o.push_back({"dx", DX.read()}), o.push_back({"dw", DW.read()});
  if (c.logits) o.push_back({"logits", L.read()});
  return o;
}

double lm_head_tolerance(DType dt, const std::string& out) {
  if (out == "count" || out == "correct") return 0;
  if (dt == DType::kBF16 && (out == "dx" || out == "dw")) return 1e-2;
  if (dt == DType::kBF16 && (out == "loss_sum" || out == "entropy_sum")) return 1e-3;
  return 1e-5;
}

std::vector<int64_t> some_targets(int64_t T, int64_t V) {
  std::vector<int64_t> t(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i) t[i] = i % 5 == 3 ? -1 : (i * 37 + 11) % V;
  return t;
}

std::vector<LmHeadCase> cases() {
  return {
      {"T 1", 3, 5, {2}, 1.0, true, true},
      {"unscored rows, logits", 5, 9, {2, -1, 8, 0, -1, 2}, 0.25, true, true},
      {"no scored row", 3, 7, {-1, -1, -1, -1}, 1.0, true, false},
      {"evaluation only", 4, 11, {0, 10, -1, 3, 5}, 1.0, false, true},
      {"V 1", 4, 1, {0, 0, -1}, 0.5, true, true},
      {"ties: first maximum counts", 3, 6, {2, 4, 4, 1, 2}, 0.2, true, true, true},
      {"T 64, C 48, V 2051", 48, 2051, some_targets(64, 2051), 1.0 / 52, true, false},
      {"T 33, C 130, V 1000, logits", 130, 1000, some_targets(33, 1000), 1.0 / 27, true, true},
  };
}

SFT_CONFORMANCE_SUITE(ConformanceLmHead);

TEST_P(ConformanceLmHead, StatisticsGradientsAndLogits) {
  SFT_SKIP_WITHOUT_KERNEL("lm_head");
  for (const LmHeadCase& c : cases())
    check_conformance(
        backend(), "lm_head_cross_entropy: " + c.name,
        [&](const Backend& be, Mode m) { return run_lm_head(c, be, m); },
        {DType::kF32, DType::kBF16}, lm_head_tolerance);
}

// The exact counts of the ties case, independently of the reference: rows with target 2 are
// correct (w[2] is the first of the two maxima), rows with target 4 are not.
TEST_P(ConformanceLmHead, TiesCountTheFirstMaximum) {
  SFT_SKIP_WITHOUT_KERNEL("lm_head");
  const LmHeadCase c = cases()[5];
  {
    const Backend& be = backend();
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF64}) {
      if (!has_dtype(be, dt)) continue;
      const Outputs o = run_lm_head(c, be, {dt, dt == DType::kF64 ? DType::kF32 : dt});
      EXPECT_EQ(o[2].second[0], 5) << dtype_name(dt);
      EXPECT_EQ(o[3].second[0], 2) << dtype_name(dt);
    }
  }
}

// The statistics from the full (T, V) logits in f64, independent of the kernels (after the swap
// the f64 "reference" is the fused kernel too): loss = lse − z[target], entropy = lse − Σ p z,
// correct = the first maximum is the target.
Outputs naive_lm_head(const LmHeadCase& c, DType grid) {
  const int64_t T = static_cast<int64_t>(c.targets.size());
  Values x, w, logits(T * c.V);
  lm_head_inputs(c, grid, &x, &w);
  double loss = 0, entropy = 0;
  int64_t count = 0, correct = 0;
  for (int64_t t = 0; t < T; ++t) {
    double* z = &logits[t * c.V];
    for (int64_t v = 0; v < c.V; ++v) {
      double s = 0;
      for (int64_t e = 0; e < c.C; ++e) s += x[t * c.C + e] * w[v * c.C + e];
      z[v] = s;
    }
    if (c.targets[t] < 0) continue;
    int64_t arg = 0;
    for (int64_t v = 1; v < c.V; ++v) arg = z[v] > z[arg] ? v : arg;
    double sum = 0, pz = 0;
    for (int64_t v = 0; v < c.V; ++v) sum += std::exp(z[v] - z[arg]);
    for (int64_t v = 0; v < c.V; ++v) pz += std::exp(z[v] - z[arg]) / sum * z[v];
    const double lse = z[arg] + std::log(sum);
    loss += lse - z[c.targets[t]];
    entropy += lse - pz;
    ++count;
    correct += arg == c.targets[t];
  }
  Outputs o = {{"loss_sum", {loss}},
               {"entropy_sum", {entropy}},
               {"count", {double(count)}},
               {"correct", {double(correct)}}};
  if (c.logits) o.push_back({"logits", logits});
  return o;
}

TEST_P(ConformanceLmHead, MatchesNaiveFullLogits) {
  SFT_SKIP_WITHOUT_KERNEL("lm_head");
  {
    const Backend& be = backend();
    for (DType dt : {DType::kF32, DType::kBF16, DType::kF64}) {
      if (!has_dtype(be, dt)) continue;
      for (const LmHeadCase& c : cases()) {
        SCOPED_TRACE("lm_head vs naive: " + c.name + " on " + be.name + " in " +
                     std::string(dtype_name(dt)));
        const Outputs got = run_lm_head(c, be, {dt, dt == DType::kF64 ? DType::kF32 : dt});
        const Outputs want = naive_lm_head(c, dt == DType::kF64 ? DType::kF32 : dt);
        for (const auto& item : want) {
          const std::string& name = item.first;
          const Values& values = item.second;
          const auto it =
              std::find_if(got.begin(), got.end(), [&](const auto& o) { return o.first == name; });
          ASSERT_NE(it, got.end()) << name;
          const double tol = dt == DType::kF64 ? (name == "count" || name == "correct" ? 0 : 1e-12)
                                               : lm_head_tolerance(dt, name);
          EXPECT_LE(relative_error(it->second, values), tol) << name;
        }
      }
    }
  }
}

void check_lm_head_fd(const LmHeadCase& c) {
  SCOPED_TRACE("lm_head fd: " + c.name);
  const int64_t T = static_cast<int64_t>(c.targets.size());
  Values x, w;
  lm_head_inputs(c, DType::kF64, &x, &w);
  ops::WorkspaceArena arena;
  const ops::Workspace ws =
      test::lm_head_workspace(arena, host_view(x, T, c.C), host_view(w, c.V, c.C));
  auto f = [&] {
    return c.scale * ops::lm_head_cross_entropy(View{}, View{}, View{}, host_view(x, T, c.C),
                                                host_view(w, c.V, c.C), c.targets.data(), c.scale,
                                                ws)
                         .loss_sum;
  };
  const Values dw0 = random_values(c.V * c.C, 4, 1.0, DType::kF64);
  Values dx(T * c.C, kNaN), dw = dw0;
  ops::lm_head_cross_entropy(host_view(dx, T, c.C), host_view(dw, c.V, c.C), View{},
                             host_view(x, T, c.C), host_view(w, c.V, c.C), c.targets.data(),
                             c.scale, ws);
  EXPECT_LE(fd_error(x, f, dx), kFdTolerance);
  EXPECT_LE(fd_error(w, f, gained(dw, dw0)), kFdTolerance);
}

TEST(ConformanceLmHeadReference, GradientsMatchFiniteDifferences) {
  check_lm_head_fd({"T 1", 3, 5, {2}, 1.0, true, false});
  check_lm_head_fd({"unscored rows", 5, 9, {2, -1, 8, 0, -1, 2}, 0.25, true, false});
  check_lm_head_fd({"T 7, V 40", 4, 40, some_targets(7, 40), 1.0 / 6, true, false});
}

}  // namespace
}  // namespace sft::conformance
