// ops::matmul against a naive triple loop, for every transpose combination, strided operands
// and accumulation, in float and double; reruns are bit-identical. (The threaded split is not
// bit-identical to a serial call: OpenBLAS handles block edges with other kernels, so results
// depend on the thread count, as allowed.)
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "ops/ops.h"

namespace sft::ops {
namespace {

template <typename T>
void check(bool ta, bool tb, bool acc, int64_t M, int64_t N, int64_t K, int64_t pad) {
  Rng rng(11, static_cast<uint64_t>(ta * 4 + tb * 2 + acc));
  const int64_t ra = ta ? K : M, ca = ta ? M : K, rb = tb ? N : K, cb = tb ? K : N;
  const int64_t lda = ca + pad, ldb = cb + pad, ldc = N + pad;
  std::vector<T> a(static_cast<size_t>(ra * lda)), b(static_cast<size_t>(rb * ldb)),
      c(static_cast<size_t>(M * ldc));
  for (T& x : a) x = rng.normal();
  for (T& x : b) x = rng.normal();
  for (T& x : c) x = rng.normal();
  std::vector<T> want = c;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += double(ta ? a[k * lda + i] : a[i * lda + k]) *
             double(tb ? b[j * ldb + k] : b[k * ldb + j]);
      want[i * ldc + j] = static_cast<T>((acc ? double(want[i * ldc + j]) : 0.0) + s);
    }
  std::vector<T> again = c, serial = c;
  matmul(c.data(), a.data(), b.data(), M, N, K, ta, tb, acc, lda, ldb, ldc);
  matmul(again.data(), a.data(), b.data(), M, N, K, ta, tb, acc, lda, ldb, ldc);
  matmul(serial.data(), a.data(), b.data(), M, N, K, ta, tb, acc, lda, ldb, ldc, false);
  const double tol = sizeof(T) == 4 ? 1e-4 : 1e-12;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      ASSERT_NEAR(serial[i * ldc + j], want[i * ldc + j], tol * std::sqrt(double(K)));
      ASSERT_NEAR(c[i * ldc + j], want[i * ldc + j], tol * std::sqrt(double(K)))
          << "ta " << ta << " tb " << tb << " acc " << acc << " at " << i << "," << j;
    }
  for (int64_t i = 0; i < M; ++i)  // padding columns untouched
    for (int64_t j = N; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], want[i * ldc + j]);
  EXPECT_EQ(c, again);
}

TEST(Matmul, MatchesNaiveForEveryLayout) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool acc : {false, true}) {
        check<float>(ta, tb, acc, 70, 90, 80, 3);   // large enough to be split over threads
        check<double>(ta, tb, acc, 90, 70, 33, 0);  // N < M split, dense
      }
}

TEST(Matmul, EmptyInnerDimensionZeroesOrKeeps) {
  std::vector<float> c = {1, 2, 3, 4};
  matmul<float>(c.data(), nullptr, nullptr, 2, 2, 0, false, false, true);
  EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4}));
  matmul<float>(c.data(), nullptr, nullptr, 2, 2, 0, false, false, false);
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace sft::ops
