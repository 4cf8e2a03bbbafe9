// ops::adamw_update bit for bit against AdamW's element update written out here in torch's
// operation order (fp32, no fused multiply-adds), on every path the CPU takes: the AVX-512 one
// where the CPU has it, the scalar one under SFT_CPU_ISA=generic (ctest ops.adamw_generic).
// Sizes cross the 16-lane tails and the pool's chunks; values include zeros, subnormals,
// gradients whose square overflows and NaN. (tests/optim/adamw_test.cpp checks the update
// against torch.optim.AdamW itself.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "core/param_slice.h"
#include "core/rng.h"
#include "ops/ops.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace sft {
namespace {

struct State {
  std::vector<float> p, g, m, v;
  std::vector<uint16_t> copy;
};

State random_state(int64_t n, uint64_t seed) {
  Rng rng(seed);
  State s;
  for (int64_t i = 0; i < n; ++i) {
    s.p.push_back(rng.normal());
    s.g.push_back(1e-2f * rng.normal());
    s.m.push_back(1e-3f * rng.normal());
    s.v.push_back(1e-5f * std::fabs(rng.normal()));
  }
  // Edge values at the front (the vector body) and at the back (the scalar tail).
  const float specials[] = {0.0f,  -0.0f,  1e-40f,
                            3e19f, -3e19f, std::numeric_limits<float>::quiet_NaN()};
  for (size_t j = 0; j < std::size(specials) && 2 * j + 1 < static_cast<size_t>(n); ++j) {
    s.g[j] = specials[j];
    s.g[static_cast<size_t>(n) - 1 - j] = specials[j];
  }
  if (n > 8) s.v[7] = 0.0f, s.m[7] = 0.0f, s.g[7] = 0.0f;  // an untouched parameter: 0 / eps
  s.copy.assign(static_cast<size_t>(n), 0);
  return s;
}

// The element update on [begin, end) (all of s by default).
void reference_update(State& s, const ops::AdamWScalars& k, bool with_copy, size_t begin = 0,
                      size_t end = SIZE_MAX) {
  for (size_t i = begin; i < std::min(end, s.p.size()); ++i) {
    float pi = s.p[i];
    const float gi = s.g[i];
    if (k.decay) pi = pi * k.decay_factor;
    s.m[i] = s.m[i] + k.lerp_weight * (gi - s.m[i]);
    s.v[i] = s.v[i] * k.beta2;
    s.v[i] = s.v[i] + k.one_minus_beta2 * gi * gi;
    const float denom = std::sqrt(s.v[i]) / k.bc2_sqrt + k.eps;
    s.p[i] = pi + k.neg_step_size * s.m[i] / denom;
    if (with_copy) s.copy[i] = f32_to_bf16(s.p[i]);
  }
}

template <typename T>
bool same(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0 || (std::isnan(a) && std::isnan(b));
}

bool same_bf16(uint16_t a, uint16_t b) {
  return a == b || (std::isnan(bf16_to_f32(a)) && std::isnan(bf16_to_f32(b)));
}

TEST(AdamWKernel, MatchesTheElementUpdateBitForBit) {
  for (const int64_t n : {1, 15, 16, 17, 1003, 70001}) {
    for (const bool decay : {false, true}) {
      for (const bool with_copy : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "n " << n << " decay " << decay << " copy " << with_copy);
        const ops::AdamWScalars k{-1e-3f, 0.9995f, 1e-8f, 0.1f, 0.999f, 0.001f, 0.99f, decay};
        State want = random_state(n, 7 + static_cast<uint64_t>(n));
        State got = want;
        reference_update(want, k, with_copy);
        ops::adamw_update(ops::view_of(got.p.data(), 1, n), ops::view_of(got.g.data(), 1, n),
                          ops::view_of(got.m.data(), 1, n), ops::view_of(got.v.data(), 1, n), k,
                          with_copy ? ops::view_of(got.copy.data(), 1, n) : ops::View{});
        int64_t mismatches = 0;
        for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
          const bool ok = same(got.p[i], want.p[i]) && same(got.m[i], want.m[i]) &&
                          same(got.v[i], want.v[i]) && same_bf16(got.copy[i], want.copy[i]);
          if (!ok && mismatches++ < 3)
            ADD_FAILURE() << "element " << i << ": p " << got.p[i] << " vs " << want.p[i] << ", m "
                          << got.m[i] << " vs " << want.m[i] << ", v " << got.v[i] << " vs "
                          << want.v[i];
        }
        EXPECT_EQ(mismatches, 0);
      }
    }
  }
}

// Counts the elements where got and want differ in p, m, v or the bf16 copy (reports 3).
int64_t mismatches(const State& got, const State& want) {
  int64_t count = 0;
  for (size_t i = 0; i < got.p.size(); ++i) {
    const bool ok = same(got.p[i], want.p[i]) && same(got.m[i], want.m[i]) &&
                    same(got.v[i], want.v[i]) && same_bf16(got.copy[i], want.copy[i]);
    if (!ok && count++ < 3)
      ADD_FAILURE() << "element " << i << ": p " << got.p[i] << " vs " << want.p[i] << ", m "
                    << got.m[i] << " vs " << want.m[i] << ", v " << got.v[i] << " vs " << want.v[i];
  }
  return count;
}

// Many slices of one arena in one call: each slice gets the element update with its own decay,
// the gaps between slices stay untouched, and sizes cross the 16-lane tails and the chunks the
// call splits the slices' concatenation into (a chunk boundary inside a slice, slices smaller
// than a chunk, empty ones).
TEST(AdamWKernel, SlicesUpdateEachSliceAsItsOwnCall) {
  const int64_t sizes[] = {1, 15, 0, 17, 1003, 16, 70001, 33, 20000, 5, 40000};
  std::vector<ParamSlice> slices;
  size_t offset = 3;  // a gap before the first slice too
  for (size_t s = 0; s < std::size(sizes); ++s) {
    slices.push_back({offset, static_cast<size_t>(sizes[s]), s % 3 != 1});
    offset += static_cast<size_t>(sizes[s]) + s % 4;  // gaps of 0..3 elements
  }
  const int64_t n = static_cast<int64_t>(offset + 2);
  for (const bool decay : {false, true}) {
    for (const bool with_copy : {false, true}) {
      SCOPED_TRACE(testing::Message() << "decay " << decay << " copy " << with_copy);
      const ops::AdamWScalars k{-1e-3f, 0.9995f, 1e-8f, 0.1f, 0.999f, 0.001f, 0.99f, decay};
      State want = random_state(n, 11);
      State got = want;
      for (const ParamSlice& slice : slices) {
        ops::AdamWScalars ks = k;
        ks.decay = decay && slice.decay;
        reference_update(want, ks, with_copy, slice.offset, slice.offset + slice.size);
      }
      ops::adamw_update_slices(ops::view_of(got.p.data(), 1, n), ops::view_of(got.g.data(), 1, n),
                               ops::view_of(got.m.data(), 1, n), ops::view_of(got.v.data(), 1, n),
                               slices, k,
                               with_copy ? ops::view_of(got.copy.data(), 1, n) : ops::View{});
      EXPECT_EQ(mismatches(got, want), 0);
    }
  }
}

TEST(AdamWKernel, SlicesPastTheViewsFailBeforeAnyUpdate) {
  State s = random_state(100, 3);
  const State before = s;
  const std::vector<ParamSlice> slices = {{0, 50, true}, {60, 41, true}};
  try {
    ops::adamw_update_slices(ops::view_of(s.p.data(), 1, 100), ops::view_of(s.g.data(), 1, 100),
                             ops::view_of(s.m.data(), 1, 100), ops::view_of(s.v.data(), 1, 100),
                             slices, ops::AdamWScalars{}, ops::View{});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("slice 1 [60, +41) runs past the 100 elements"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(std::memcmp(s.p.data(), before.p.data(), 100 * sizeof(float)), 0);
}

}  // namespace
}  // namespace sft
