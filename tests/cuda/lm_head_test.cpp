// The fused LM head + cross-entropy on CUDA (ops/cuda/lm_head.cpp) against an f64 reference
// on the same values: the full (T × V) logits in double, the softcap as cap·tanh(z / cap), the
// gradients of scale · Σ loss by their closed form (dz = scale · (softmax − onehot) · (1 −
// tanh²)). Without a softcap that reference must itself agree with the CPU's f64 kernel
// (ops::lm_head_cross_entropy on f64 views) to 1e-12, so it is the CPU's reference extended.
// Each case runs twice for identical bits. Cases: T = 1; rows with target −1 and full logits;
// chunks of rows and vocabulary blocks that divide neither T nor V (and V not a multiple of the
// row pass's 256 threads); evaluation only, dx only, dw only; scale ≠ 1; softcap on and off;
// f32 and bf16. Vocabulary shards (tensor parallelism): 2, 3 and 4 ranks of a thread
// ShardGroup, the padded split included (rows past the vocabulary hold large logits that must
// stay out of the softmax), against the same whole-head reference; every rank the same
// statistics and dx bits, dw += only its rows, the padding rows' dw untouched.
//
// Tolerances (max |err| / max |ref|), as tests/conformance/lm_head_test.cpp: f32 everything
// 1e-5; bf16 loss and entropy 1e-3 (logits, and the capped logits, rounded to bf16 before the
// softmax as autocast's are), dx, dw 1e-2 (bf16 dlogits), logits 1e-5 (bf16 with logits runs
// the f32 path on the widened values); count and correct exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/shard_group.h"
#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"
#include "thread_shard_group.h"

namespace sft {
namespace {

using namespace cuda_test;  // DeviceTensor, HostTensor, filled, random_values, ...

struct Case {
  std::string name;
  int64_t C, V;
  std::vector<int64_t> targets;
  double scale = 1, softcap = 0;
  bool dx = true, dw = true, logits = false;
  ops::LmHeadTuning tuning = {};
  // Exact logits x·w[v] = w[v][0] with three equal maxima: ids kTies (the first counts).
  bool ties = false;
};

// Two maxima in one thread of the row pass (3 and 259), one in another (300), in two vocabulary
// blocks of 256.
constexpr int64_t kTies[3] = {3, 259, 300};

struct Result {
  double loss = 0, entropy = 0;
  int64_t count = 0, correct = 0;
  Values dx, dw, logits;
};

std::vector<int64_t> some_targets(int64_t T, int64_t V) {
  std::vector<int64_t> t(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i) t[size_t(i)] = i % 7 == 5 ? -1 : (i * 53 + 17) % V;
  return t;
}

int64_t rows_of(const Case& c) {
  return static_cast<int64_t>(c.targets.size());
}

Values inputs_x(const Case& c, DType grid) {
  Values x = random_values(size_t(rows_of(c) * c.C), 1, 1.0, grid);
  if (c.ties)
    for (size_t e = 0; e < x.size(); ++e) x[e] = e % size_t(c.C) == 0 ? 1 : 0;
  return x;
}
Values inputs_w(const Case& c, DType grid) {
  Values w = random_values(size_t(c.V * c.C), 2, 0.5, grid);
  if (c.ties)
    for (int64_t v = 0; v < c.V; ++v) {
      for (int64_t e = 1; e < c.C; ++e) w[size_t(v * c.C + e)] = 0;
      double& w0 = w[size_t(v * c.C)];
      w0 = std::min(w0, 1.5);
      for (int64_t t : kTies) w0 = v == t ? 2 : w0;
    }
  return w;
}
Values dw_start(const Case& c) {
  return random_values(size_t(c.V * c.C), 3, 0x1p-10);
}

// The f64 reference from the full logits.
Result reference(const Case& c, DType grid) {
  const int64_t T = rows_of(c), C = c.C, V = c.V;
  const Values x = inputs_x(c, grid), w = inputs_w(c, grid);
  Result r;
  r.dx.assign(size_t(T * C), 0);
  r.dw = dw_start(c);
  r.logits.assign(size_t(T * V), 0);
  std::vector<double> z(static_cast<size_t>(V)), slope(static_cast<size_t>(V));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t v = 0; v < V; ++v) {
      double s = 0;
      for (int64_t e = 0; e < C; ++e) s += x[size_t(t * C + e)] * w[size_t(v * C + e)];
      slope[size_t(v)] = 1;
      if (c.softcap > 0) {
        const double th = std::tanh(s / c.softcap);
        s = c.softcap * th;
        slope[size_t(v)] = 1 - th * th;
      }
      z[size_t(v)] = s;
      r.logits[size_t(t * V + v)] = s;
    }
    const int64_t y = c.targets[size_t(t)];
    if (y < 0) continue;
    int64_t arg = 0;
    for (int64_t v = 1; v < V; ++v) arg = z[size_t(v)] > z[size_t(arg)] ? v : arg;
    double sum = 0, pz = 0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(z[size_t(v)] - z[size_t(arg)]);
    for (int64_t v = 0; v < V; ++v)
      pz += std::exp(z[size_t(v)] - z[size_t(arg)]) / sum * z[size_t(v)];
    const double lse = z[size_t(arg)] + std::log(sum);
    r.loss += lse - z[size_t(y)];
    r.entropy += lse - pz;
    r.count += 1;
    r.correct += arg == y ? 1 : 0;
    for (int64_t v = 0; v < V; ++v) {
      const double g =
          c.scale * (std::exp(z[size_t(v)] - lse) - (v == y ? 1 : 0)) * slope[size_t(v)];
      for (int64_t e = 0; e < C; ++e) {
        r.dx[size_t(t * C + e)] += g * w[size_t(v * C + e)];
        r.dw[size_t(v * C + e)] += g * x[size_t(t * C + e)];
      }
    }
  }
  return r;
}

// The CPU's f64 kernel on the same values (no softcap there yet).
Result cpu_f64(const Case& c, DType grid) {
  const int64_t T = rows_of(c), C = c.C, V = c.V;
  HostTensor X(DType::kF64, T, C, inputs_x(c, grid)), W(DType::kF64, V, C, inputs_w(c, grid));
  HostTensor dX(DType::kF64, T, C, filled(size_t(T * C), kNaN));
  HostTensor dW(DType::kF64, V, C, dw_start(c)), L(DType::kF64, T, V, filled(size_t(T * V), kNaN));
  ops::WorkspaceArena arena;
  const ops::Workspace ws = arena.get(ops::lm_head_workspace_bytes(
      {.dtype = DType::kF64, .rows = T, .hidden = C, .vocab = V, .logits = true}));
  const ops::LmHeadStats s = ops::lm_head_cross_entropy(dX.view(), dW.view(), L.view(), X.view(),
                                                        W.view(), c.targets.data(), c.scale, ws);
  return {s.loss_sum, s.entropy_sum, s.count, s.correct, dX.read(), dW.read(), L.read()};
}

Result on_cuda(const Case& c, DType dtype) {
  const int64_t T = rows_of(c), C = c.C, V = c.V;
  DeviceTensor X(dtype, T, C, inputs_x(c, dtype)), W(dtype, V, C, inputs_w(c, dtype));
  DeviceTensor dX(DType::kF32, T, C, filled(size_t(T * C), kNaN));
  DeviceTensor dW(DType::kF32, V, C, dw_start(c));
  DeviceTensor L(DType::kF32, T, V, filled(size_t(T * V), kNaN));
  const DeviceIds targets(c.targets);
  const ops::LmHeadStats s = ops::cuda::lm_head_cross_entropy(
      c.dx ? dX.view() : ops::View{}, c.dw ? dW.view() : ops::View{},
      c.logits ? L.view() : ops::View{}, X.view(), W.view(), targets.data(), c.scale, {}, {},
      c.softcap, c.tuning);
  Result r{s.loss_sum, s.entropy_sum, s.count, s.correct, {}, {}, {}};
  if (c.dx) r.dx = dX.read();
  if (c.dw) r.dw = dW.read();
  if (c.logits) r.logits = L.read();
  return r;
}

std::vector<Case> cases() {
  std::vector<Case> list;
  list.push_back({"T 1", 5, 7, {3}, 1.0, 0, true, true, true});
  list.push_back({"unscored rows, logits, V 300, softcap",
                  9,
                  300,
                  {2, -1, 299, 0, -1, 150},
                  0.25,
                  1.5,
                  true,
                  true,
                  true});
  list.push_back({"chunks of 64 rows, vocabulary blocks of 384",
                  20,
                  1000,
                  some_targets(150, 1000),
                  1.0 / 131,
                  0,
                  true,
                  true,
                  false,
                  {64, 384}});
  list.push_back({"chunks of 64 rows, vocabulary blocks of 384, softcap",
                  20,
                  1000,
                  some_targets(150, 1000),
                  1.0 / 131,
                  2.0,
                  true,
                  true,
                  false,
                  {64, 384}});
  list.push_back({"chunks of 3 rows, blocks of 5, logits, softcap",
                  6,
                  23,
                  some_targets(11, 23),
                  0.5,
                  1.0,
                  true,
                  true,
                  true,
                  {3, 5}});
  list.push_back(
      {"evaluation only, logits", 8, 129, some_targets(9, 129), 1.0, 0, false, false, true});
  list.push_back({"dx only, softcap", 8, 129, some_targets(9, 129), 2.0, 3.0, true, false, false});
  list.push_back({"dw only", 8, 129, some_targets(9, 129), 2.0, 0, false, true, false});
  list.push_back({"exact ties: the first maximum counts",
                  2,
                  600,
                  {3, 259, 300, 3, -1, 300, 259, 3},
                  1.0,
                  0,
                  true,
                  true,
                  true,
                  {0, 256},
                  true});
  list.push_back(
      {"default plan, V 2051", 48, 2051, some_targets(64, 2051), 1.0 / 55, 0, true, true, false});
  return list;
}

double tolerance(DType dt, const std::string& out) {
  if (dt == DType::kBF16 && (out == "dx" || out == "dw")) return 1e-2;
  if (dt == DType::kBF16 && (out == "loss" || out == "entropy")) return 1e-3;
  return 1e-5;
}

void expect_close(const Result& got, const Result& want, const Case& c, DType dt) {
  EXPECT_LE(relative_error({got.loss}, {want.loss}), tolerance(dt, "loss")) << "loss";
  EXPECT_LE(relative_error({got.entropy}, {want.entropy}), tolerance(dt, "entropy")) << "entropy";
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.correct, want.correct);
  if (c.dx) EXPECT_LE(relative_error(got.dx, want.dx), tolerance(dt, "dx")) << "dx";
  if (c.dw) EXPECT_LE(relative_error(got.dw, want.dw), tolerance(dt, "dw")) << "dw";
  if (c.logits)
    EXPECT_LE(relative_error(got.logits, want.logits), tolerance(dt, "logits")) << "logits";
}

TEST(CudaLmHead, ReferenceIsTheCpuF64KernelWithoutSoftcap) {
  // Runs on the CPU only: the test's reference is checked before the kernel is checked with it.
  for (const Case& c : cases()) {
    if (c.softcap > 0) continue;
    SCOPED_TRACE(c.name);
    const Result want = cpu_f64(c, DType::kF32), mine = reference(c, DType::kF32);
    EXPECT_LE(relative_error({mine.loss, mine.entropy}, {want.loss, want.entropy}), 1e-12);
    EXPECT_EQ(mine.count, want.count);
    EXPECT_EQ(mine.correct, want.correct);
    EXPECT_LE(relative_error(mine.dx, want.dx), 1e-12);
    EXPECT_LE(relative_error(mine.dw, want.dw), 1e-12);
    EXPECT_LE(relative_error(mine.logits, want.logits), 1e-12);
  }
}

TEST(CudaLmHead, MatchesTheF64ReferenceAndRerunsBitIdentical) {
  SFT_SKIP_WITHOUT_CUDA();
  for (const Case& c : cases())
    for (DType dt : {DType::kF32, DType::kBF16}) {
      SCOPED_TRACE(c.name + " in " + std::string(dtype_name(dt)));
      const auto outs = run_twice([&] {
        const Result r = on_cuda(c, dt);
        return std::vector<Values>{
            {r.loss, r.entropy, double(r.count), double(r.correct)}, r.dx, r.dw, r.logits};
      });
      Result got{outs[0][0], outs[0][1], int64_t(outs[0][2]), int64_t(outs[0][3]), outs[1],
                 outs[2],    outs[3]};
      expect_close(got, reference(c, dt), c, dt);
      if (c.ties) EXPECT_EQ(got.correct, 3);  // the rows of target 3, the first maximum
    }
}

// The chunking is invisible in the statistics but for the sum order: one chunk of every row and
// one block of the whole vocabulary against many small ones, f32, to 1e-6.
TEST(CudaLmHead, ChunkingChangesOnlyRounding) {
  SFT_SKIP_WITHOUT_CUDA();
  Case whole = cases()[3];
  ASSERT_EQ(whole.name, "chunks of 64 rows, vocabulary blocks of 384, softcap");
  Case chunked = whole;
  whole.tuning = {1000, 1000};
  chunked.tuning = {7, 100};
  const Result a = on_cuda(whole, DType::kF32), b = on_cuda(chunked, DType::kF32);
  EXPECT_LE(relative_error({a.loss, a.entropy}, {b.loss, b.entropy}), 1e-6);
  EXPECT_EQ(a.correct, b.correct);
  EXPECT_LE(relative_error(a.dx, b.dx), 1e-6);
  EXPECT_LE(relative_error(a.dw, b.dw), 1e-6);
}

// The head split over `ranks` thread ranks of ceil(V / ranks) rows each (the last padded past
// V, VocabShard::vocab = V then): statistics of rank 0 (every rank's checked equal), dx of rank
// 0 (checked equal), dw of the first V rows; the padding rows' dw must keep its start.
Result on_cuda_shards(const Case& c, DType dtype, int ranks) {
  const int64_t T = rows_of(c), C = c.C, V = c.V, rows = (V + ranks - 1) / ranks;
  const int64_t padded = rows * ranks;
  Values w = inputs_w(c, dtype), dw0 = dw_start(c);
  for (int64_t e = V * C; e < padded * C; ++e) {
    w.push_back(round_to(e % C == 0 ? 3.0 : 1.0, dtype));  // large logits, if they were seen
    dw0.push_back(0x1p-9);
  }
  std::vector<ops::LmHeadStats> stats(static_cast<size_t>(ranks));
  std::vector<Values> dx(static_cast<size_t>(ranks)), dw(static_cast<size_t>(ranks));
  const Values x = inputs_x(c, dtype);
  testing::ThreadShardGroups::run(ranks, [&](ShardGroup& g) {
    const size_t r = static_cast<size_t>(g.rank());
    const int64_t begin = g.rank() * rows;
    DeviceTensor X(dtype, T, C, x);
    DeviceTensor W(dtype, rows, C, Values(w.begin() + begin * C, w.begin() + (begin + rows) * C));
    DeviceTensor dX(DType::kF32, T, C, filled(size_t(T * C), kNaN));
    DeviceTensor dW(DType::kF32, rows, C,
                    Values(dw0.begin() + begin * C, dw0.begin() + (begin + rows) * C));
    const DeviceIds targets(c.targets);
    stats[r] =
        ops::lm_head_cross_entropy(c.dx ? dX.view() : ops::View{}, c.dw ? dW.view() : ops::View{},
                                   ops::View{}, X.view(), W.view(), targets.data(), c.scale, {},
                                   ops::VocabShard{begin, &g, padded == V ? 0 : V}, c.softcap);
    if (c.dx) dx[r] = dX.read();
    if (c.dw) dw[r] = dW.read();
  });
  Result got{
      stats[0].loss_sum, stats[0].entropy_sum, stats[0].count, stats[0].correct, dx[0], {}, {}};
  for (size_t r = 1; r < stats.size(); ++r) {
    EXPECT_TRUE(same_bits({stats[r].loss_sum, stats[r].entropy_sum, double(stats[r].correct)},
                          {got.loss, got.entropy, double(got.correct)}))
        << "statistics of rank " << r;
    if (c.dx) EXPECT_TRUE(same_bits(dx[r], dx[0])) << "dx of rank " << r;
  }
  if (c.dw) {
    for (const Values& d : dw) got.dw.insert(got.dw.end(), d.begin(), d.end());
    EXPECT_TRUE(same_bits(Values(got.dw.begin() + V * C, got.dw.end()),
                          Values(dw0.begin() + V * C, dw0.end())))
        << "the padding rows' dw";
    got.dw.resize(size_t(V * C));
  }
  return got;
}

TEST(CudaLmHead, VocabularyShardsMatchTheWholeHeadReference) {
  SFT_SKIP_WITHOUT_CUDA();
  std::vector<Case> list;
  for (const Case& c : cases())
    if (!c.logits) list.push_back(c);
  Case ties = cases()[8];
  ASSERT_TRUE(ties.ties);
  ties.logits = false;
  list.push_back(ties);
  for (const Case& c : list)
    for (int ranks : {2, 3, 4})
      for (DType dt : {DType::kF32, DType::kBF16}) {
        SCOPED_TRACE(c.name + " on " + std::to_string(ranks) + " shards in " +
                     std::string(dtype_name(dt)));
        const auto outs = run_twice([&] {
          const Result r = on_cuda_shards(c, dt, ranks);
          return std::vector<Values>{
              {r.loss, r.entropy, double(r.count), double(r.correct)}, r.dx, r.dw};
        });
        Result got{outs[0][0], outs[0][1], int64_t(outs[0][2]), int64_t(outs[0][3]), outs[1],
                   outs[2],    {}};
        expect_close(got, reference(c, dt), c, dt);
        // Maxima at ids 3, 259 and 300 on different ranks: still the first counts.
        if (c.ties) EXPECT_EQ(got.correct, 3);
      }
}

// A group of two whose collectives must never run (the shard is refused before).
class NeverUsedGroup : public ShardGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void sum(std::span<float>) override { ADD_FAILURE() << "sum"; }
  void sum(std::span<double>) override { ADD_FAILURE() << "sum"; }
  void max(std::span<float>) override { ADD_FAILURE() << "max"; }
  void max(std::span<double>) override { ADD_FAILURE() << "max"; }
  void gather(std::span<float>) override { ADD_FAILURE() << "gather"; }
};

TEST(CudaLmHead, BadTargetsSoftcapsAndShardsFailClearly) {
  SFT_SKIP_WITHOUT_CUDA();
  DeviceTensor X(DType::kF32, 2, 3, filled(6, 0)), W(DType::kF32, 4, 3, filled(12, 0));
  const DeviceIds bad(std::vector<int64_t>{0, 4}), good(std::vector<int64_t>{0, -1});
  expect_error("target 4 at row 1 is outside [0, 4)", [&] {
    ops::lm_head_cross_entropy({}, {}, {}, X.view(), W.view(), bad.data(), 1.0, {});
  });
  expect_error("lm_head_cross_entropy: softcap -1", [&] {
    ops::lm_head_cross_entropy({}, {}, {}, X.view(), W.view(), good.data(), 1.0, {}, {}, -1.0);
  });
  NeverUsedGroup group;  // 2 × 4 rows: ids [0, 8)
  DeviceTensor L(DType::kF32, 2, 4, filled(8, 0));
  expect_error("lm_head_cross_entropy: no logits from a vocabulary shard", [&] {
    ops::lm_head_cross_entropy({}, {}, L.view(), X.view(), W.view(), good.data(), 1.0, {},
                               {0, &group});
  });
  expect_error("vocabulary rows [6, 10) of 0 are not a slice of a 2-way split of 8 rows", [&] {
    ops::lm_head_cross_entropy({}, {}, {}, X.view(), W.view(), good.data(), 1.0, {}, {6, &group});
  });
  const DeviceIds past(std::vector<int64_t>{0, 7});
  expect_error("target 7 at row 1 is outside [0, 7)", [&] {
    ops::lm_head_cross_entropy({}, {}, {}, X.view(), W.view(), past.data(), 1.0, {},
                               {4, &group, 7});
  });
  DeviceTensor X64(DType::kF64, 2, 3, filled(6, 0)), W64(DType::kF64, 4, 3, filled(12, 0));
  expect_error("lm_head_cross_entropy: the CUDA kernel takes f32 or bf16", [&] {
    ops::lm_head_cross_entropy({}, {}, {}, X64.view(), W64.view(), good.data(), 1.0, {});
  });
}

// The CPU soft-caps too (tests/ops/lm_head_ce_test.cpp checks it against the reference, the
// bf16 path against autocast's rounding); it refuses a negative cap as CUDA does.
TEST(CudaLmHead, TheCpuRefusesANegativeSoftcap) {
  std::vector<float> x(6, 0.0f), w(12, 0.0f);
  const int64_t targets[2] = {0, 1};
  expect_error("lm_head_cross_entropy: softcap -1", [&] {
    ops::lm_head_cross_entropy({}, {}, {}, ops::view_of(x.data(), 2, 3),
                               ops::view_of(w.data(), 4, 3), targets, 1.0, {}, {}, -1.0);
  });
}

}  // namespace
}  // namespace sft
