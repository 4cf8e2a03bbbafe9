// The bf16 rounding fused into its producers (ops.h: rmsnorm_forward's bf16 out, SwiGLU's bf16
// h, dgate and dup, add's rounded copy) and the vector casts and adds, checked bit for bit: a fused
// bf16 output is exactly the f32 output rounded by core/half.h's f32_to_bf16, and the f32 outputs
// are exactly the scalar expressions the kernels computed before (written out again here), so
// neither precision mode changes a bit. The ctest ops.bf16_fusion_generic reruns these with
// SFT_CPU_ISA=generic, so the AVX-512 and the baseline paths are both held to the same values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/rng.h"
#include "ops/ops.h"

// The reference expressions below must not be contracted into multiply-adds (nor are the
// kernels').
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace sft::ops {
namespace {

uint32_t bits(float x) {
  return std::bit_cast<uint32_t>(x);
}

// Equal bits, or both NaN (which NaN an operation on NaNs returns depends on operand order).
bool same(float a, float b) {
  return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b));
}
bool same_bf16(uint16_t a, uint16_t b) {
  return a == b || (std::isnan(bf16_to_f32(a)) && std::isnan(bf16_to_f32(b)));
}

std::vector<float> normals(size_t n, uint64_t stream, float scale) {
  Rng rng(2026, stream);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.normal()) * scale;
  return v;
}

std::vector<uint16_t> rounded(const std::vector<float>& v) {
  std::vector<uint16_t> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = f32_to_bf16(v[i]);
  return r;
}

// Floats that exercise the rounding: every bf16 value, the halfway points and their
// neighbours above and below, subnormals, NaNs with payloads, infinities, random values.
std::vector<float> rounding_inputs() {
  std::vector<float> v;
  for (uint32_t h = 0; h < (1u << 16); ++h)
    for (uint32_t low : {0u, 0x7fffu, 0x8000u, 0x8001u, 0x0001u})
      v.push_back(std::bit_cast<float>((h << 16) | low));
  for (float x : normals(1003, 1, 3.0f)) v.push_back(x);
  v.push_back(std::numeric_limits<float>::denorm_min());
  v.push_back(std::bit_cast<float>(0x7f812345u));  // signalling NaN with a payload
  v.push_back(std::bit_cast<float>(0xffc00001u));
  return v;
}

TEST(Bf16Fusion, CastToBf16RoundsLikeHalfH) {
  const std::vector<float> in = rounding_inputs();
  // Odd lengths and offsets reach the vector loops' scalar tails.
  for (size_t off : {size_t{0}, size_t{3}}) {
    const int64_t n = static_cast<int64_t>(in.size() - off);
    std::vector<uint16_t> out(static_cast<size_t>(n), 0xdead);
    cast(view_of(out.data(), 1, n), view_of(in.data() + off, 1, n));
    int bad = 0;
    for (int64_t i = 0; i < n; ++i)
      if (out[i] != f32_to_bf16(in[i + off]) && ++bad <= 5)
        ADD_FAILURE() << std::hex << "0x" << bits(in[i + off]) << " → 0x" << out[i] << ", want 0x"
                      << f32_to_bf16(in[i + off]);
  }
}

TEST(Bf16Fusion, CastFromBf16IsExact) {
  std::vector<uint16_t> in(1u << 16);
  for (uint32_t h = 0; h < in.size(); ++h) in[h] = static_cast<uint16_t>(h);
  std::vector<float> out(in.size() - 1);
  const int64_t n = static_cast<int64_t>(out.size());
  cast(view_of(out.data(), 1, n), view_of(in.data() + 1, 1, n));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits(out[i]), bits(bf16_to_f32(in[i + 1]))) << i;
}

TEST(Bf16Fusion, AddsMatchTheScalarSums) {
  const int64_t n = 1000 * 16 + 7;
  const std::vector<float> dst0 = normals(n, 2, 1.0f), src = normals(n, 3, 1e-3f);
  const std::vector<uint16_t> src16 = rounded(normals(n, 4, 2.0f));
  std::vector<float> a = dst0, b = dst0, c = dst0;
  std::vector<uint16_t> c16(n);
  add(view_of(a.data(), 1, n), view_of(src.data(), 1, n));
  add(view_of(b.data(), 1, n), view_of(src16.data(), 1, n));
  add(view_of(c.data(), 1, n), view_of(src.data(), 1, n), view_of(c16.data(), 1, n));
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(bits(a[i]), bits(dst0[i] + src[i])) << i;
    ASSERT_EQ(bits(b[i]), bits(dst0[i] + bf16_to_f32(src16[i]))) << i;
    ASSERT_EQ(bits(c[i]), bits(a[i])) << i;
    ASSERT_EQ(c16[i], f32_to_bf16(a[i])) << i;
  }
  // The rounded copy is bf16 beside f32 dst and src only.
  EXPECT_THROW(add(view_of(b.data(), 1, n), view_of(src16.data(), 1, n), view_of(c16.data(), 1, n)),
               Error);
}

// The f32 forward as a scalar loop: Σ x² in index order, then w · (x · r).
void rmsnorm_reference(std::vector<float>& out, std::vector<float>& rstd,
                       const std::vector<float>& x, const std::vector<float>& w, int64_t N,
                       int64_t C, double eps) {
  for (int64_t i = 0; i < N; ++i) {
    float ss = 0;
    for (int64_t j = 0; j < C; ++j) ss += x[i * C + j] * x[i * C + j];
    const float r = 1.0f / std::sqrt(ss / static_cast<float>(C) + static_cast<float>(eps));
    rstd[i] = r;
    for (int64_t j = 0; j < C; ++j) out[i * C + j] = w[j] * (x[i * C + j] * r);
  }
}

TEST(Bf16Fusion, RmsNormBf16OutIsTheRoundedF32Out) {
  struct Shape {
    int64_t N, C;
  };
  // Row counts around the 16-row blocks and the pool's 64-row grain; widths around 16 lanes.
  for (const Shape s : {Shape{1, 1}, Shape{3, 5}, Shape{16, 16}, Shape{17, 33}, Shape{40, 64},
                        Shape{150, 1027}, Shape{300, 128}}) {
    SCOPED_TRACE("rmsnorm (" + std::to_string(s.N) + ", " + std::to_string(s.C) + ")");
    const size_t n = static_cast<size_t>(s.N * s.C);
    std::vector<float> x = normals(n, 5, 2.0f);
    const std::vector<float> w = normals(static_cast<size_t>(s.C), 6, 1.0f);
    x[0] = 3e38f;  // Σ x² overflows in row 0: rstd 0, out 0 or NaN alike
    std::vector<float> want(n), want_rstd(s.N), out(n), rstd(s.N), rstd16(s.N);
    std::vector<uint16_t> out16(n);
    rmsnorm_reference(want, want_rstd, x, w, s.N, s.C, 1e-6);
    rmsnorm_forward(view_of(out.data(), s.N, s.C), view_of(rstd.data(), s.N, 1),
                    view_of(x.data(), s.N, s.C), view_of(w.data(), 1, s.C), 1e-6);
    rmsnorm_forward(view_of(out16.data(), s.N, s.C), view_of(rstd16.data(), s.N, 1),
                    view_of(x.data(), s.N, s.C), view_of(w.data(), 1, s.C), 1e-6);
    int bad = 0;
    for (int64_t i = 0; i < s.N; ++i) {
      EXPECT_TRUE(same(rstd[i], want_rstd[i])) << "rstd row " << i;
      EXPECT_TRUE(same(rstd16[i], want_rstd[i])) << "bf16 rstd row " << i;
    }
    for (size_t i = 0; i < n; ++i) {
      if (!same(out[i], want[i]) && ++bad <= 5)
        ADD_FAILURE() << "f32 out " << i << ": " << out[i] << ", want " << want[i];
      if (!same_bf16(out16[i], f32_to_bf16(want[i])) && ++bad <= 5)
        ADD_FAILURE() << "bf16 out " << i << ": " << out16[i] << ", want " << f32_to_bf16(want[i]);
    }
  }
}

// The f32 backward against its scalar loops: dot in index order, then dx; dw summed over rows
// in row order (from a non-zero start: it accumulates).
TEST(Bf16Fusion, RmsNormBackwardMatchesTheScalarLoops) {
  struct Shape {
    int64_t N, C;
  };
  for (const Shape s : {Shape{1, 1}, Shape{17, 33}, Shape{40, 64}, Shape{150, 1027},
                        Shape{300, 128}, Shape{2, 600}}) {
    SCOPED_TRACE("rmsnorm backward (" + std::to_string(s.N) + ", " + std::to_string(s.C) + ")");
    const size_t n = static_cast<size_t>(s.N * s.C);
    const std::vector<float> x = normals(n, 11, 2.0f), g = normals(n, 12, 1.0f);
    const std::vector<float> w = normals(static_cast<size_t>(s.C), 13, 1.0f);
    const std::vector<float> dw0 = normals(static_cast<size_t>(s.C), 14, 1e-3f);
    std::vector<float> out(n), rstd(s.N), dx(n), dw = dw0, want_dx(n), want_dw(dw0);
    rmsnorm_reference(out, rstd, x, w, s.N, s.C, 1e-6);
    for (int64_t i = 0; i < s.N; ++i) {
      const float r = rstd[i];
      float dot = 0;
      for (int64_t j = 0; j < s.C; ++j) dot += w[j] * g[i * s.C + j] * x[i * s.C + j];
      const float c = dot * r * r / static_cast<float>(s.C);
      for (int64_t j = 0; j < s.C; ++j)
        want_dx[i * s.C + j] = r * (w[j] * g[i * s.C + j] - x[i * s.C + j] * c);
    }
    for (int64_t j = 0; j < s.C; ++j) {
      float acc = 0;
      for (int64_t i = 0; i < s.N; ++i) acc += g[i * s.C + j] * x[i * s.C + j] * rstd[i];
      want_dw[j] += acc;
    }
    rmsnorm_backward(view_of(dx.data(), s.N, s.C), view_of(dw.data(), 1, s.C),
                     view_of(g.data(), s.N, s.C), view_of(x.data(), s.N, s.C),
                     view_of(rstd.data(), s.N, 1), view_of(w.data(), 1, s.C));
    int bad = 0;
    for (size_t i = 0; i < n; ++i)
      if (!same(dx[i], want_dx[i]) && ++bad <= 5)
        ADD_FAILURE() << "dx " << i << ": " << dx[i] << ", want " << want_dx[i];
    for (int64_t j = 0; j < s.C; ++j)
      if (!same(dw[j], want_dw[j]) && ++bad <= 5)
        ADD_FAILURE() << "dw " << j << ": " << dw[j] << ", want " << want_dw[j];
  }
}

TEST(Bf16Fusion, RmsNormBf16OutRefusesOtherDtypes) {
  std::vector<float> x(4), w(2);
  std::vector<uint16_t> out(4), r16(2);
  EXPECT_THROW(rmsnorm_forward(view_of(out.data(), 2, 2), view_of(r16.data(), 2, 1),
                               view_of(x.data(), 2, 2), view_of(w.data(), 1, 2), 1e-6),
               Error);
}

// Every bf16 gate (all 2¹⁶ patterns, NaNs and infinities included) against SwiGLU's f32
// expressions with std::exp, and the bf16 outputs against those values rounded.
TEST(Bf16Fusion, SwiGluMatchesTheF32ExpressionsForEveryBf16Gate) {
  const int64_t n = (1 << 16) + 5;  // + a vector tail
  std::vector<uint16_t> gate(n);
  for (int64_t i = 0; i < n; ++i) gate[i] = static_cast<uint16_t>(i * 40503);  // all, permuted
  const std::vector<uint16_t> up = rounded(normals(n, 7, 1.0f));
  const std::vector<float> dh = normals(n, 8, 1.0f);
  std::vector<float> h(n), dg(n), du(n);
  std::vector<uint16_t> h16(n), dg16(n), du16(n);
  const View G = view_of(gate.data(), 1, n), U = view_of(up.data(), 1, n);
  const View DH = view_of(dh.data(), 1, n);
  swiglu_forward(view_of(h.data(), 1, n), G, U);
  swiglu_forward(view_of(h16.data(), 1, n), G, U);
  swiglu_backward(view_of(dg.data(), 1, n), view_of(du.data(), 1, n), DH, G, U);
  swiglu_backward(view_of(dg16.data(), 1, n), view_of(du16.data(), 1, n), DH, G, U);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float g = bf16_to_f32(gate[i]), u = bf16_to_f32(up[i]);
    const float sig = 1.0f / (1.0f + std::exp(-g));
    const float want_h = g * sig * u;
    const float want_du = dh[i] * (g * sig);
    const float want_dg = dh[i] * u * sig * (1.0f + g * (1.0f - sig));
    const bool ok = same(h[i], want_h) && same(du[i], want_du) && same(dg[i], want_dg) &&
                    same_bf16(h16[i], f32_to_bf16(want_h)) &&
                    same_bf16(du16[i], f32_to_bf16(want_du)) &&
                    same_bf16(dg16[i], f32_to_bf16(want_dg));
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << "gate 0x" << std::hex << gate[i] << std::dec << ": h " << h[i] << " / "
                    << want_h << ", dgate " << dg[i] << " / " << want_dg << ", dup " << du[i]
                    << " / " << want_du;
  }
}

TEST(Bf16Fusion, SwiGluBf16OutputsRefuseMixedDtypes) {
  std::vector<uint16_t> g(4), u(4), out16(4);
  std::vector<float> out(4), dh(4);
  const View G = view_of(g.data(), 1, 4), U = view_of(u.data(), 1, 4);
  // bf16 dgate with an f32 dup, and a bf16 dh.
  EXPECT_THROW(swiglu_backward(view_of(out16.data(), 1, 4), view_of(out.data(), 1, 4),
                               view_of(dh.data(), 1, 4), G, U),
               Error);
  EXPECT_THROW(swiglu_backward(view_of(out16.data(), 1, 4), view_of(out16.data(), 1, 4),
                               view_of(out16.data(), 1, 4), G, U),
               Error);
}

}  // namespace
}  // namespace sft::ops
