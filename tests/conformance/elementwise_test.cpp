// Conformance of the elementwise view ops: add (f32 += f32, f32 += bf16, f32 += f32 with a bf16
// rounded copy), add_bias, bias_backward, add_scalar, add_uniform_noise
// against the f64 CPU run (the noise's reference draws core/rng.h's stream word by word); cast
// bit-exact against core/half.h's conversions (its spec), specials (±0, ties, subnormals, overflow,
// ±inf, NaN) included. (Their gradients are checked by finite differences in matmul_test.cpp's
// linear layer.)
//
// Tolerances (max |err| / max |ref|), f32 and f32 += bf16: add 1e-6 and add_bias 1e-6 (one
// rounding per element), add_uniform_noise 1e-6 (two), bias_backward 1e-5 (column sums over up to
// 257 rows); cast exact.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "conformance.h"

namespace sft::conformance {
namespace {

struct Shape {
  int64_t rows, cols;
  std::string name() const {
    return "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
  }
};
const Shape kShapes[] = {{1, 1}, {7, 13}, {1, 1027}, {257, 3}, {64, 1027}};  // last: parallel split

// dst (f32 or f64) += src, where src is bf16 in the bf16 mode.
Outputs run_add(const Shape& s, const Backend& be, Mode m) {
  const DType dst = m.dtype == DType::kBF16 ? DType::kF32 : m.dtype;
  const size_t n = static_cast<size_t>(s.rows * s.cols);
  Buffer D(be, dst, s.rows, s.cols, random_values(n, 1, 1.0, DType::kF32));
  Buffer S(be, m.dtype, s.rows, s.cols, random_values(n, 2, 1.0, m.grid));
  ops::add(D.view(), S.view());
  return {{"dst", D.read()}};
}

SFT_CONFORMANCE_SUITE(ConformanceElementwise);

TEST_P(ConformanceElementwise, Add) {
  for (const Shape& s : kShapes)
    check_conformance(
        backend(), "add " + s.name(), [&](const Backend& be, Mode m) { return run_add(s, be, m); },
        {DType::kF32, DType::kBF16}, uniform_tolerance(1e-6, 1e-6));
}

// f32 dst += f32 src with the sum's bf16 rounding written beside it (the f64 reference: a plain
// f64 add, its "rounded" copy the f64 sum). Tolerance: dst 1e-6, rounded one bf16 rounding.
Outputs run_add_rounded(const Shape& s, const Backend& be, Mode m) {
  const DType f = m.reference() ? DType::kF64 : DType::kF32;
  const size_t n = static_cast<size_t>(s.rows * s.cols);
  Buffer D(be, f, s.rows, s.cols, random_values(n, 1, 1.0, DType::kF32));
  Buffer S(be, f, s.rows, s.cols, random_values(n, 2, 1.0, DType::kF32));
  if (m.reference()) {
    ops::add(D.view(), S.view());
    return {{"dst", D.read()}, {"rounded", D.read()}};
  }
  Buffer R(be, DType::kBF16, s.rows, s.cols, Values(n, kNaN));
  ops::add(D.view(), S.view(), R.view());
  return {{"dst", D.read()}, {"rounded", R.read()}};
}

// x += c: one rounding per element (f32 only; the f64 reference run is f64).
Outputs run_add_scalar(const Shape& s, const Backend& be, Mode m) {
  const size_t n = static_cast<size_t>(s.rows * s.cols);
  Buffer X(be, m.dtype, s.rows, s.cols, random_values(n, 3, 1.0, DType::kF32));
  if (m.dtype == DType::kF32) {
    ops::add_scalar(X.view(), 1.0f);
    return {{"x", X.read()}};
  }
  Values x = X.read();
  for (double& v : x) v += 1.0;
  return {{"x", x}};
}

TEST_P(ConformanceElementwise, AddScalar) {
  for (const Shape& s : kShapes)
    check_conformance(
        backend(), "add_scalar " + s.name(),
        [&](const Backend& be, Mode m) { return run_add_scalar(s, be, m); }, {DType::kF32},
        uniform_tolerance(1e-6));
}

// x += (2u − 1) · 0.05 with u word 5 + i of Philox stream (11, 3): f32 only; the f64 run is the
// reference, drawn through Rng (an independent walk of the stream: a kernel that offsets or
// reorders the words fails by the noise's size).
Outputs run_uniform_noise(const Shape& s, const Backend& be, Mode m) {
  const size_t n = static_cast<size_t>(s.rows * s.cols);
  Buffer X(be, m.dtype, s.rows, s.cols, random_values(n, 3, 1.0, DType::kF32));
  if (m.dtype == DType::kF32) {
    ops::add_uniform_noise(X.view(), 0.05f, 11, 3, 5);
    return {{"x", X.read()}};
  }
  Values x = X.read();
  Rng rng(11, 3);
  rng.set_position(5);
  for (double& v : x) v += (2.0 * rng.uniform() - 1.0) * static_cast<double>(0.05f);
  return {{"x", x}};
}

TEST_P(ConformanceElementwise, UniformNoise) {
  for (const Shape& s : kShapes)
    check_conformance(
        backend(), "add_uniform_noise " + s.name(),
        [&](const Backend& be, Mode m) { return run_uniform_noise(s, be, m); }, {DType::kF32},
        uniform_tolerance(1e-6));
}

// Dropout p = 0.3 with the mask of words 9 + k of stream (13, 4): dst = mask ⊙ src / 0.7 (f32
// and bf16), and dst += that (f32). The f64 reference draws the mask through Rng, so a kernel
// whose mask is shifted or reordered fails by whole elements. One rounding per element (two when
// accumulating; bf16: the bf16 rounding).
Outputs run_dropout(const Shape& s, const Backend& be, Mode m, bool accumulate) {
  const size_t n = static_cast<size_t>(s.rows * s.cols);
  const Values src = random_values(n, 5, 1.0, m.grid), start = random_values(n, 6, 1.0, m.grid);
  constexpr float p = 0.3f;
  if (m.dtype != DType::kF64) {
    Buffer D(be, m.dtype, s.rows, s.cols, start), S(be, m.dtype, s.rows, s.cols, src);
    ops::dropout(D.view(), S.view(), p, 13, 4, 9, accumulate);
    return {{"dst", D.read()}};
  }
  Values d = start;
  Rng rng(13, 4);
  rng.set_position(9);
  const double keep_scale = ops::dropout_keep_scale(p);
  for (size_t k = 0; k < n; ++k) {
    const double v = rng.uniform() >= p ? src[k] * keep_scale : 0.0;
    d[k] = accumulate ? d[k] + v : v;
  }
  return {{"dst", d}};
}

TEST_P(ConformanceElementwise, Dropout) {
  for (const Shape& s : kShapes) {
    check_conformance(
        backend(), "dropout " + s.name(),
        [&](const Backend& be, Mode m) { return run_dropout(s, be, m, false); },
        {DType::kF32, DType::kBF16},
        [](DType d, const std::string&) { return d == DType::kBF16 ? 4e-3 : 1e-6; });
    check_conformance(
        backend(), "dropout += " + s.name(),
        [&](const Backend& be, Mode m) { return run_dropout(s, be, m, true); }, {DType::kF32},
        uniform_tolerance(1e-6));
  }
}

TEST_P(ConformanceElementwise, AddWithRoundedCopy) {
  for (const Shape& s : kShapes)
    check_conformance(
        backend(), "add rounded " + s.name(),
        [&](const Backend& be, Mode m) { return run_add_rounded(s, be, m); }, {DType::kBF16},
        [](DType, const std::string& o) { return o == "rounded" ? 4e-3 : 1e-6; });
}

Outputs run_bias(const Shape& s, const Backend& be, Mode m) {
  const size_t n = static_cast<size_t>(s.rows * s.cols);
  Buffer Y(be, m.dtype, s.rows, s.cols, random_values(n, 1, 1.0, m.grid));
  Buffer B(be, m.dtype, 1, s.cols, random_values(s.cols, 2, 1.0, m.grid));
  Buffer DY(be, m.dtype, s.rows, s.cols, random_values(n, 3, 1.0, m.grid));
  Buffer DB(be, m.dtype, 1, s.cols, random_values(s.cols, 4, kAccumulateStart, m.grid));
  ops::add_bias(Y.view(), B.view());
  ops::bias_backward(DB.view(), DY.view());
  return {{"y", Y.read()}, {"db", DB.read()}};
}

TEST_P(ConformanceElementwise, AddBiasAndBiasBackward) {
  for (const Shape& s : kShapes)
    check_conformance(
        backend(), "add_bias " + s.name(),
        [&](const Backend& be, Mode m) { return run_bias(s, be, m); }, {DType::kF32},
        [](DType, const std::string& out) { return out == "y" ? 1e-6 : 1e-5; });
}

// f32 values that exercise bf16 rounding: ±0, exact values, ties to even both ways, just above a
// tie, the largest finite (rounds to inf), subnormals, ±inf, NaN, and random values.
Values cast_inputs() {
  const float inf = std::numeric_limits<float>::infinity();
  Values v = {0.0f,
              -0.0f,
              1.0f,
              -2.5f,
              1.0f + 0x1p-8f,
              1.0f + 3 * 0x1p-8f,
              1.0f + 0x1p-8f + 0x1p-20f,
              std::numeric_limits<float>::max(),
              std::numeric_limits<float>::denorm_min(),
              1e-40f,
              -3e-39f,
              inf,
              -inf,
              std::numeric_limits<float>::quiet_NaN()};
  const Values r = random_values(40000, 9, 10.0, DType::kF32);  // enough to split over threads
  v.insert(v.end(), r.begin(), r.end());
  return v;
}

bool same(double got, double want) {
  return (std::isnan(got) && std::isnan(want)) ||
         std::bit_cast<uint64_t>(got) == std::bit_cast<uint64_t>(want);
}

// Casts `in` (held as `from`) to `to` on the backend; compares with `expected` bit for bit.
void check_cast(const Backend& be, DType to, DType from, const Values& in, const Values& expected) {
  SCOPED_TRACE("cast " + std::string(dtype_name(from)) + " → " + std::string(dtype_name(to)) +
               " on " + be.name);
  const int64_t n = static_cast<int64_t>(in.size());
  Buffer S(be, from, 1, n, in), D(be, to, 1, n, Values(in.size(), kNaN));
  ops::cast(D.view(), S.view());
  const Values got = D.read();
  int bad = 0;
  for (size_t i = 0; i < in.size(); ++i)
    if (!same(got[i], expected[i]) && ++bad <= 5)
      ADD_FAILURE() << "element " << i << ": " << in[i] << " → " << got[i] << ", want "
                    << expected[i];
}

TEST_P(ConformanceElementwise, CastIsExact) {
  const Values f32 = cast_inputs();
  Values bf16 = f32, f64(f32.size());
  for (size_t i = 0; i < f32.size(); ++i) bf16[i] = bf16_to_f32(f32_to_bf16(float(f32[i])));
  // f64 values off the f32 grid, so f64 → f32 must round (to nearest even, as a C++ cast).
  for (size_t i = 0; i < f32.size(); ++i)
    f64[i] = std::isfinite(f32[i]) ? f32[i] * (1 + 1e-9) : f32[i];
  Values f64_to_f32 = f64;
  for (double& x : f64_to_f32) x = static_cast<float>(x);
  {
    const Backend& be = backend();
    check_cast(be, DType::kBF16, DType::kF32, f32, bf16);
    check_cast(be, DType::kF32, DType::kBF16, bf16, bf16);
    if (has_dtype(be, DType::kF64)) {
      check_cast(be, DType::kF64, DType::kF32, f32, f32);
      check_cast(be, DType::kF32, DType::kF64, f64, f64_to_f32);
    }
    check_cast(be, DType::kF32, DType::kF32, f32, f32);
  }
}

}  // namespace
}  // namespace sft::conformance
