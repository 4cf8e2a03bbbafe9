// Tiled attention forward/backward on CUDA vs the CPU's f64 kernels on the same values, twice for
// identical bits: packed documents of different lengths (length 1 included), a sequence against
// its KV cache (q_offset > 0) and two of them in one call, GQA 4:2 and 4:1, sliding windows (one
// that hides whole key tiles, one that leaves keys no query sees), a soft-cap and a set scale,
// head dims 5, 16, 64, 128 and 200 (every padded bucket, odd sizes), f32 and bf16 (out bf16 and
// f32). Tolerances (max |err| / max |ref|), as the CPU tiled kernels get against the reference:
// f32 1e-5 for out, lse, dq, dk, dv; bf16 1e-2 for out, dq, dk, dv (P, dS and out rounded to
// bf16 inside) and 1e-5 for lse (fp32 softmax). Sinks forward/backward likewise (1e-5).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cuda_test_support.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/ops.h"
#include "test_workspace.h"

namespace sft {
namespace {

using namespace cuda_test;  // DeviceTensor, HostTensor, filled, random_values, ...
using ops::AttentionDims;
using ops::AttentionSegment;

struct Case {
  std::string name;
  int64_t Tq, Tk;
  AttentionDims dims;
  std::vector<AttentionSegment> segments;
};

Case packed(std::string name, const std::vector<int64_t>& lengths, AttentionDims dims) {
  Case c{std::move(name), 0, 0, dims, {}};
  for (int64_t n : lengths) {
    c.segments.push_back({c.Tq, n, c.Tq, n, 0});
    c.Tq += n;
  }
  c.Tk = c.Tq;
  return c;
}

std::vector<Case> cases() {
  return {
      packed("documents 1 7 40 5, GQA 4:2, D 64", {1, 7, 40, 5}, {4, 2, 64, 0}),
      packed("documents 9 1 37, GQA 4:1, D 5, window 3", {9, 1, 37}, {4, 1, 5, 3}),
      packed("document 50, D 128, window 19", {50}, {2, 1, 128, 19}),
      packed("documents 3 12, D 200", {3, 12}, {2, 2, 200, 0}),
      packed("documents 20 30, GQA 4:2, D 16, scale 0.3, soft-cap 2", {20, 30},
             {4, 2, 16, 0, 0.3, 2.0}),
      // A sequence against its cache (the decode / chunked-prefill form) and two in one call.
      {"3 queries at offset 17 of 20 keys, GQA 4:2, D 16, scale 0.2, soft-cap 1.5",
       3,
       20,
       {4, 2, 16, 0, 0.2, 1.5},
       {{0, 3, 0, 20, 17}}},
      {"two sequences decoding, window 4",
       3,
       45,
       {2, 2, 8, 4},
       {{0, 2, 0, 40, 38}, {2, 1, 40, 5, 4}}},
  };
}

struct Outputs {
  Values out, lse, dq, dk, dv;
};

struct Inputs {
  Values q, k, v, dout;
};

Inputs inputs_of(const Case& c, DType grid) {
  const int64_t qc = c.dims.H * c.dims.D, kc = c.dims.Hkv * c.dims.D;
  return {random_values(size_t(c.Tq * qc), 1, 1.0, grid),
          random_values(size_t(c.Tk * kc), 2, 1.0, grid),
          random_values(size_t(c.Tk * kc), 3, 1.0, grid),
          random_values(size_t(c.Tq * qc), 4, 1.0, grid)};
}

// On the device: q, k, v in `in` (f32 or bf16), out in `out_dtype`, the rest f32.
Outputs run_cuda(const Case& c, const Inputs& x, DType in, DType out_dtype) {
  const AttentionDims& d = c.dims;
  const int64_t qc = d.H * d.D, kc = d.Hkv * d.D;
  const size_t nq = size_t(c.Tq * qc), nk = size_t(c.Tk * kc), nl = size_t(c.Tq * d.H);
  DeviceTensor Q(in, c.Tq, qc, x.q), K(in, c.Tk, kc, x.k), V(in, c.Tk, kc, x.v);
  DeviceTensor DO(DType::kF32, c.Tq, qc, x.dout);
  DeviceTensor O(out_dtype, c.Tq, qc, filled(nq, kNaN)),
      L(DType::kF32, c.Tq, d.H, filled(nl, kNaN));
  DeviceTensor DQ(DType::kF32, c.Tq, qc, filled(nq, kNaN)),
      DK(DType::kF32, c.Tk, kc, filled(nk, kNaN)), DV(DType::kF32, c.Tk, kc, filled(nk, kNaN));
  ops::cuda::attention_forward(O.view(), L.view(), Q.view(), K.view(), V.view(), c.segments, d, {});
  ops::cuda::attention_backward(DQ.view(), DK.view(), DV.view(), DO.view(), O.view(), L.view(),
                                Q.view(), K.view(), V.view(), c.segments, d, {});
  return {O.read(), L.read(), DQ.read(), DK.read(), DV.read()};
}

// The CPU's f64 kernels on the same values; backward takes the out the device returned (the
// device's backward read that out), so only the kernels' own errors are compared.
Outputs run_reference(const Case& c, const Inputs& x, const Values& device_out) {
  const AttentionDims& d = c.dims;
  const int64_t qc = d.H * d.D, kc = d.Hkv * d.D;
  const size_t nq = size_t(c.Tq * qc), nk = size_t(c.Tk * kc), nl = size_t(c.Tq * d.H);
  const DType f64 = DType::kF64;
  HostTensor Q(f64, c.Tq, qc, x.q), K(f64, c.Tk, kc, x.k), V(f64, c.Tk, kc, x.v),
      DO(f64, c.Tq, qc, x.dout);
  HostTensor O(f64, c.Tq, qc, filled(nq, kNaN)), L(f64, c.Tq, d.H, filled(nl, kNaN));
  HostTensor DQ(f64, c.Tq, qc, filled(nq, kNaN)), DK(f64, c.Tk, kc, filled(nk, kNaN)),
      DV(f64, c.Tk, kc, filled(nk, kNaN));
  ops::WorkspaceArena arena;
  const ops::Workspace ws = test::attention_workspace(arena, f64, c.segments, d);
  ops::attention_forward(O.view(), L.view(), Q.view(), K.view(), V.view(), c.segments, d, ws);
  Outputs r{O.read(), L.read(), {}, {}, {}};
  HostTensor OB(f64, c.Tq, qc, device_out);
  ops::attention_backward(DQ.view(), DK.view(), DV.view(), DO.view(), OB.view(), L.view(), Q.view(),
                          K.view(), V.view(), c.segments, d, ws);
  r.dq = DQ.read();
  r.dk = DK.read();
  r.dv = DV.read();
  return r;
}

void check(const Case& c, DType in, DType out_dtype) {
  SCOPED_TRACE(c.name + ", q/k/v " + std::string(dtype_name(in)) + ", out " +
               std::string(dtype_name(out_dtype)));
  const Inputs x = inputs_of(c, in);
  Outputs got;
  run_twice([&] {
    got = run_cuda(c, x, in, out_dtype);
    return std::vector<Values>{got.out, got.lse, got.dq, got.dk, got.dv};
  });
  const Outputs want = run_reference(c, x, got.out);
  const double tol = in == DType::kBF16 ? 1e-2 : 1e-5;
  const std::pair<const char*, double> errors[] = {{"out", relative_error(got.out, want.out)},
                                                   {"lse", relative_error(got.lse, want.lse)},
                                                   {"dq", relative_error(got.dq, want.dq)},
                                                   {"dk", relative_error(got.dk, want.dk)},
                                                   {"dv", relative_error(got.dv, want.dv)}};
  for (const auto& [name, err] : errors) {
    EXPECT_LE(err, std::string(name) == "lse" ? 1e-5 : tol) << name;
    if (std::getenv("SFT_CONFORMANCE_REPORT"))  // as tests/conformance: every measured error
      std::printf("%s, %s/%s: %s %.3g\n", c.name.c_str(), std::string(dtype_name(in)).c_str(),
                  std::string(dtype_name(out_dtype)).c_str(), name, err);
  }
}

TEST(CudaAttention, F32MatchesTheF64Reference) {
  SFT_SKIP_WITHOUT_CUDA();
  for (const Case& c : cases()) check(c, DType::kF32, DType::kF32);
}

TEST(CudaAttention, Bf16MatchesTheF64Reference) {
  SFT_SKIP_WITHOUT_CUDA();
  for (const Case& c : cases()) {
    check(c, DType::kBF16, DType::kBF16);
    check(c, DType::kBF16, DType::kF32);
  }
}

// Rows outside every segment stay as they were (here NaN), keys no query sees get dk = dv = 0.
TEST(CudaAttention, RowsOutsideTheSegmentsAreUntouched) {
  SFT_SKIP_WITHOUT_CUDA();
  const Case c{"rows 0, 5 and keys 0, 9 outside", 6, 10, {2, 1, 8, 0}, {{1, 4, 1, 8, 4}}};
  const Inputs x = inputs_of(c, DType::kF32);
  const Outputs got = run_cuda(c, x, DType::kF32, DType::kF32);
  const int64_t qc = 16, kc = 8;
  for (int64_t row : {int64_t{0}, int64_t{5}}) {
    for (int64_t e = 0; e < qc; ++e) {
      EXPECT_TRUE(std::isnan(got.out[size_t(row * qc + e)])) << "out row " << row;
      EXPECT_TRUE(std::isnan(got.dq[size_t(row * qc + e)])) << "dq row " << row;
    }
    EXPECT_TRUE(std::isnan(got.lse[size_t(row * 2)])) << "lse row " << row;
  }
  for (int64_t row : {int64_t{0}, int64_t{9}})
    for (int64_t e = 0; e < kc; ++e) {
      EXPECT_TRUE(std::isnan(got.dk[size_t(row * kc + e)])) << "dk row " << row;
      EXPECT_TRUE(std::isnan(got.dv[size_t(row * kc + e)])) << "dv row " << row;
    }
  for (int64_t e = 0; e < 6 * qc; ++e)
    if (e >= qc && e < 5 * qc) EXPECT_FALSE(std::isnan(got.out[size_t(e)])) << "out " << e;
  for (int64_t e = kc; e < 9 * kc; ++e) EXPECT_FALSE(std::isnan(got.dk[size_t(e)])) << "dk " << e;
}

// Sinks (gpt-oss): forward out, lse and backward dsinks (+=, from small values) against the
// CPU's f64 kernels on the same values, out f32 and (backward) bf16; 1e-5.
TEST(CudaAttention, SinksMatchTheF64Reference) {
  SFT_SKIP_WITHOUT_CUDA();
  const int64_t T = 300, H = 3, D = 7;  // T past one 256-thread block's first stride
  const size_t n = size_t(T * H * D), nl = size_t(T * H);
  for (DType out_dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(std::string("out ") + std::string(dtype_name(out_dtype)));
    const Values out = random_values(n, 11, 1.0, out_dtype), lse = random_values(nl, 12, 2.0);
    const Values sinks = random_values(size_t(H), 13, 1.0), dout = random_values(n, 14, 1.0);
    const Values ds0 = random_values(size_t(H), 15, 0x1p-10);
    const auto got = run_twice([&] {
      DeviceTensor O(DType::kF32, T, H * D, out), L(DType::kF32, T, H, lse),
          S(DType::kF32, 1, H, sinks);
      DeviceTensor OB(out_dtype, T, H * D, out), DO(DType::kF32, T, H * D, dout),
          DS(DType::kF32, 1, H, ds0);
      ops::cuda::attention_sinks_forward(O.view(), L.view(), S.view());
      ops::cuda::attention_sinks_backward(DS.view(), DO.view(), OB.view(), L.view(), S.view());
      return std::vector<Values>{O.read(), L.read(), DS.read()};
    });
    const DType f64 = DType::kF64;
    HostTensor O(f64, T, H * D, out), L(f64, T, H, lse), S(f64, 1, H, sinks),
        OB(f64, T, H * D, out), DO(f64, T, H * D, dout), DS(f64, 1, H, ds0);
    ops::attention_sinks_forward(O.view(), L.view(), S.view());
    ops::attention_sinks_backward(DS.view(), DO.view(), OB.view(), L.view(), S.view());
    if (out_dtype == DType::kF32) EXPECT_LE(relative_error(got[0], O.read()), 1e-5) << "out";
    EXPECT_LE(relative_error(got[1], L.read()), 1e-5) << "lse";
    EXPECT_LE(relative_error(got[2], DS.read()), 1e-5) << "dsinks";
  }
}

TEST(CudaAttention, BadCallsFailBeforeAnyKernel) {
  SFT_SKIP_WITHOUT_CUDA();
  const AttentionDims d{2, 1, 4, 0};
  DeviceTensor q(DType::kF32, 4, 8, filled(32, 0)), k(DType::kF32, 4, 4, filled(16, 0)),
      out(DType::kF32, 4, 8, filled(32, 0)), lse(DType::kF32, 4, 2, filled(8, 0));
  const std::vector<AttentionSegment> past = {{0, 4, 0, 3, 0}};  // query 3 past the last key
  expect_error("q_offset + q_len <= k_len", [&] {
    ops::cuda::attention_forward(out.view(), lse.view(), q.view(), k.view(), k.view(), past, d, {});
  });
  const std::vector<AttentionSegment> seg = {{0, 4, 0, 4, 0}};
  expect_error("attention_forward: k, v must be", [&] {
    ops::cuda::attention_forward(out.view(), lse.view(), q.view(), q.view(), q.view(), seg, d, {});
  });
  DeviceTensor big(DType::kF32, 1, 2 * 300, filled(600, 0)), l1(DType::kF32, 1, 2, filled(2, 0));
  expect_error("head dim 300", [&] {
    ops::cuda::attention_forward(big.view(), l1.view(), big.view(), big.view(), big.view(),
                                 std::vector<AttentionSegment>{{0, 1, 0, 1, 0}}, {2, 2, 300, 0},
                                 {});
  });
}

}  // namespace
}  // namespace sft
