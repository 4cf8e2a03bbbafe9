// ops::attention_forward_bf16 / attention_backward_bf16 (AMX, or the portable product under
// SFT_CPU_ISA=generic: ctest ops.flash_attention_bf16_generic) against the float64 eager
// reference on the same inputs rounded to bf16: packed documents of lengths 1, 7, 64, 130, GQA
// and plain heads, causal with and without sliding windows, decode against a longer KV run, T not
// a multiple of the tile, D = 16, 64, 80, 128 and several tile shapes. Also: out written as bf16
// is the bf16 rounding of out written as f32; bit-identical results twice and with 1 and 2
// threads; which product runs (amx on a CPU that has it, generic when forced).
//
// Tolerance (max |err| ≤ tol · max |ref|, per output): the kernel rounds P, dS, dO and out to
// bf16 (relative error ≤ 2⁻⁹ each, RNE) and accumulates in fp32 (≪ that). out = Σ P v / l has
// |err| ≤ 2⁻⁹ Σ P |v| / l + 2⁻⁹ |out| ≤ 2 · 2⁻⁹ max |v| ≈ 0.4 % of max |v|; the gradients chain
// two or three such roundings through sums with cancellation (dS = P (dP − Δ), dP from the rounded
// dO), so their error relative to their own maximum can be larger. Limits: 1e-2 for out, dq, dk,
// dv (about 2.5× the 2 · 2⁻⁹ bound), 1e-5 absolute for lse (fp32 softmax, no bf16 in it).
// Measured on these cases (SFT_ATTENTION_BF16_REPORT=1 prints them), AMX and generic alike:
// out ≤ 3.2e-3, dq, dk, dv ≤ 3.7e-3, lse ≤ 6.2e-7.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "ops/attention.h"
#include "ops/attention_cases.h"
#include "ops/cpu/amx.h"
#include "ops/cpu/cpu_features.h"
#include "ops/cpu/flash_attention_bf16.h"
#include "ops/ops.h"
#include "test_workspace.h"

namespace sft::ops {
namespace {

using testing::Case;
using testing::decode;
using testing::packed;
using testing::with_score_map;

// Normal values rounded to bf16, as bits and as the exact doubles they hold.
struct Tensor {
  std::vector<uint16_t> bits;
  std::vector<double> value;
};

Tensor random_bf16(size_t n, uint64_t stream) {
  Rng rng(11, stream);
  Tensor t{std::vector<uint16_t>(n), std::vector<double>(n)};
  for (size_t i = 0; i < n; ++i) {
    t.bits[i] = f32_to_bf16(static_cast<float>(rng.normal()));
    t.value[i] = bf16_to_f32(t.bits[i]);
  }
  return t;
}

struct Inputs {
  Tensor q, k, v, dout;
};

Inputs make_inputs(const Case& c) {
  const auto qn = static_cast<size_t>(c.Tq * c.dims.H * c.dims.D);
  const auto kn = static_cast<size_t>(c.Tk * c.dims.Hkv * c.dims.D);
  return {random_bf16(qn, 1), random_bf16(kn, 2), random_bf16(kn, 3), random_bf16(qn, 4)};
}

struct Result {
  std::vector<double> out, lse, dq, dk, dv;
};

// The tiled kernel in double on the same (bf16-exact) values: 1e-12 from the eager reference
// (flash_attention_test.cpp), so it serves as the float64 reference here.
Result reference(const Case& c, const Inputs& in) {
  Result r{std::vector<double>(in.q.value.size()),
           std::vector<double>(static_cast<size_t>(c.Tq * c.dims.H)),
           std::vector<double>(in.q.value.size()), std::vector<double>(in.k.value.size()),
           std::vector<double>(in.k.value.size())};
  AttentionWorkspace ws;
  WorkspaceArena arena;
  test::give_attention_memory(ws, arena, DType::kF64, c.segs, c.dims);
  attention_forward(r.out.data(), r.lse.data(), in.q.value.data(), in.k.value.data(),
                    in.v.value.data(), c.segs, c.dims, ws);
  attention_backward(r.dq.data(), r.dk.data(), r.dv.data(), in.dout.value.data(), r.out.data(),
                     r.lse.data(), in.q.value.data(), in.k.value.data(), in.v.value.data(), c.segs,
                     c.dims, ws);
  return r;
}

// The bf16 kernels; out saved as bf16 (the decoder layer's way) or as f32.
template <typename Out>
Result run_bf16(const Case& c, const Inputs& in, AttentionWorkspace& ws,
                std::vector<Out>* out_raw = nullptr) {
  std::vector<Out> out(in.q.bits.size());
  std::vector<float> lse(static_cast<size_t>(c.Tq * c.dims.H)), dq(out.size()),
      dk(in.k.bits.size()), dv(in.k.bits.size());
  std::vector<float> dout(in.dout.value.begin(), in.dout.value.end());
  WorkspaceArena arena;
  test::give_attention_memory(ws, arena, DType::kBF16, c.segs, c.dims);
  attention_forward_bf16(out.data(), lse.data(), in.q.bits.data(), in.k.bits.data(),
                         in.v.bits.data(), c.segs, c.dims, ws);
  attention_backward_bf16(dq.data(), dk.data(), dv.data(), dout.data(), out.data(), lse.data(),
                          in.q.bits.data(), in.k.bits.data(), in.v.bits.data(), c.segs, c.dims, ws);
  Result r;
  for (Out o : out) {
    if constexpr (std::is_same_v<Out, float>)
      r.out.push_back(o);
    else
      r.out.push_back(bf16_to_f32(o));
  }
  r.lse.assign(lse.begin(), lse.end());
  r.dq.assign(dq.begin(), dq.end());
  r.dk.assign(dk.begin(), dk.end());
  r.dv.assign(dv.begin(), dv.end());
  if (out_raw) *out_raw = out;
  return r;
}

double relative(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0, mag = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff = std::max(diff, std::abs(got[i] - want[i]));
    mag = std::max(mag, std::abs(want[i]));
  }
  return mag > 0 ? diff / mag : diff;  // all-zero reference (window 1: dq = dk = 0): absolute
}

double absolute(const std::vector<double>& got, const std::vector<double>& want) {
  double diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff = std::max(diff, std::abs(got[i] - want[i]));
  }
  return diff;
}

constexpr double kOutTol = 1e-2, kLseTol = 1e-5, kGradTol = 1e-2;

void expect_close(const Case& c, int64_t q_tile, int64_t k_tile) {
  const std::string what = "H " + std::to_string(c.dims.H) + " Hkv " + std::to_string(c.dims.Hkv) +
                           " D " + std::to_string(c.dims.D) + " window " +
                           std::to_string(c.dims.window) + " tiles " + std::to_string(q_tile) +
                           "x" + std::to_string(k_tile);
  SCOPED_TRACE(what);
  const Inputs in = make_inputs(c);
  const Result want = reference(c, in);
  AttentionWorkspace ws;
  ws.q_tile = q_tile;
  ws.k_tile = k_tile;
  const Result got = run_bf16<uint16_t>(c, in, ws);
  const double e_out = relative(got.out, want.out), e_lse = absolute(got.lse, want.lse);
  const double e_dq = relative(got.dq, want.dq), e_dk = relative(got.dk, want.dk),
               e_dv = relative(got.dv, want.dv);
  if (std::getenv("SFT_ATTENTION_BF16_REPORT"))
    std::printf("%s [%s]: out %.2e lse %.2e dq %.2e dk %.2e dv %.2e\n", what.c_str(),
                flash_bf16::tile_gemm().name, e_out, e_lse, e_dq, e_dk, e_dv);
  EXPECT_LE(e_out, kOutTol);
  EXPECT_LE(e_lse, kLseTol);
  EXPECT_LE(e_dq, kGradTol);
  EXPECT_LE(e_dk, kGradTol);
  EXPECT_LE(e_dv, kGradTol);
}

const std::vector<int64_t> kDocs = {1, 7, 64, 130};

TEST(FlashAttentionBf16, RunsTheExpectedProduct) {
  const char* isa = std::getenv("SFT_CPU_ISA");
  const std::string name = flash_bf16::tile_gemm().name;
  if (isa && std::string(isa) == "generic")
    EXPECT_EQ(name, "generic");
  else if (cpu::use_amx())
    EXPECT_EQ(name, "amx");
  else if (cpu::use_avx512())
    EXPECT_EQ(name, "avx512 widened");
  std::printf("bf16 attention tile product: %s\n", name.c_str());
}

TEST(FlashAttentionBf16, PackedDocumentsMatchReference) {
  for (int64_t D : {16, 64, 128})
    for (auto [H, Hkv] : {std::pair<int64_t, int64_t>{4, 2}, {4, 4}})
      expect_close(packed(kDocs, H, Hkv, D, 0), AttentionWorkspace{}.q_tile,
                   AttentionWorkspace{}.k_tile);
}

TEST(FlashAttentionBf16, OddHeadDimMatchesReference) {
  expect_close(packed({50, 77}, 4, 1, 80, 0), 32, 32);
  expect_close(packed({3, 40}, 2, 2, 24, 9), 16, 16);
}

TEST(FlashAttentionBf16, PartialAndSmallTilesMatchReference) {
  for (auto [bq, bk] : {std::pair<int64_t, int64_t>{8, 16}, {5, 7}, {32, 128}, {1, 1}, {33, 40}})
    expect_close(packed(kDocs, 4, 2, 64, 0), bq, bk);
}

TEST(FlashAttentionBf16, SlidingWindowMatchesReference) {
  for (int64_t window : {1, 5, 50, 200})
    for (auto [bq, bk] : {std::pair<int64_t, int64_t>{64, 64}, {8, 16}, {5, 7}})
      expect_close(packed(kDocs, 4, 2, 64, window), bq, bk);
  expect_close(packed({300}, 2, 2, 128, 20), 128, 64);
}

TEST(FlashAttentionBf16, DecodeAgainstLongerKeysMatchesReference) {
  for (int64_t fresh : {1, 3})
    for (int64_t window : {0, 9})
      for (auto [bq, bk] : {std::pair<int64_t, int64_t>{64, 64}, {2, 16}})
        expect_close(decode(100 - fresh, fresh, 4, 2, 128, window), bq, bk);
}

TEST(FlashAttentionBf16, ScaleAndSoftCapMatchReference) {
  for (auto [scale, cap] : {std::pair<double, double>{0.05, 0}, {0, 2}, {0.06, 2}}) {
    expect_close(with_score_map(packed(kDocs, 4, 2, 64, 0), scale, cap), 64, 64);
    expect_close(with_score_map(packed(kDocs, 4, 4, 128, 20), scale, cap), 32, 64);
    expect_close(with_score_map(decode(70, 3, 4, 2, 128, 9), scale, cap), 64, 64);
  }
}

TEST(FlashAttentionBf16, BfloatOutIsTheRoundedFloatOut) {
  const Case c = packed(kDocs, 4, 2, 64, 0);
  const Inputs in = make_inputs(c);
  AttentionWorkspace ws;
  std::vector<uint16_t> b16;
  std::vector<float> f32;
  const Result a = run_bf16<uint16_t>(c, in, ws, &b16);
  const Result b = run_bf16<float>(c, in, ws, &f32);
  for (size_t i = 0; i < b16.size(); ++i) ASSERT_EQ(b16[i], f32_to_bf16(f32[i])) << i;
  EXPECT_EQ(a.lse, b.lse);
  // Backward from the f32 out: the same Δ up to out's rounding, so close, not equal.
  EXPECT_LE(relative(b.dq, a.dq), kGradTol);
}

TEST(FlashAttentionBf16, BitIdenticalTwiceAndWithOneAndTwoThreads) {
  for (int64_t window : {0, 30}) {
    const Case c = packed({200, 1, 7, 64, 130, 300}, 4, 2, 64, window);
    const Inputs in = make_inputs(c);
    AttentionWorkspace serial, threaded;
    serial.max_threads = 1;
    threaded.max_threads = 2;
    const Result a = run_bf16<uint16_t>(c, in, serial);
    const Result b = run_bf16<uint16_t>(c, in, threaded);
    const Result again = run_bf16<uint16_t>(c, in, threaded);
    for (const auto* r : {&b, &again}) {
      EXPECT_EQ(a.out, r->out);
      EXPECT_EQ(a.lse, r->lse);
      EXPECT_EQ(a.dq, r->dq);
      EXPECT_EQ(a.dk, r->dk);
      EXPECT_EQ(a.dv, r->dv);
    }
  }
}

TEST(FlashAttentionBf16, ViewsOfOtherMixesAreRefused) {
  std::vector<uint16_t> b(64);
  std::vector<float> f(64);
  const View qb = view_of(b.data(), 4, 4), qf = view_of(f.data(), 4, 4);
  const View lse = view_of(f.data(), 4, 1);
  const std::vector<AttentionSegment> segs = {{0, 4, 0, 4, 0}};
  const AttentionDims dims{1, 1, 4, 0};
  auto expect_refused = [](auto&& fn, const char* what) {
    try {
      fn();
      ADD_FAILURE() << what << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("legal"), std::string::npos) << e.what();
    }
  };
  WorkspaceArena arena;
  const Workspace ws = test::attention_workspace(arena, DType::kBF16, segs, dims);
  expect_refused([&] { attention_forward(qb, lse, qb, qf, qb, segs, dims, ws); }, "k f32");
  expect_refused(
      [&] { attention_forward(qb, qb.reshaped(16, 1).first(4, 1), qb, qb, qb, segs, dims, ws); },
      "lse bf16");
  expect_refused([&] { attention_backward(qb, qf, qf, qf, qb, lse, qb, qb, qb, segs, dims, ws); },
                 "dq bf16");
  // The legal mixes run.
  attention_forward(qb, lse, qb, qb, qb, segs, dims, ws);
  attention_forward(qf, lse, qb, qb, qb, segs, dims, ws);
  std::vector<float> g(64 * 4);
  const View dq = view_of(g.data(), 4, 4), dk = view_of(g.data() + 64, 4, 4),
             dv = view_of(g.data() + 128, 4, 4), dout = view_of(g.data() + 192, 4, 4);
  attention_backward(dq, dk, dv, dout, qb, lse, qb, qb, qb, segs, dims, ws);
  attention_backward(dq, dk, dv, dout, qf, lse, qb, qb, qb, segs, dims, ws);
}

}  // namespace
}  // namespace sft::ops
