// Conformance of the ops that take column blocks (View::columns: rows `stride` elements apart):
// matmul (any operand), cast (either side) and rope, each against the same op on dense copies of
// the blocks (bit for bit on every backend; matmul within f32 rounding, as a GEMM library may
// block a strided problem differently), the columns around the blocks untouched; and the
// refusals: every other op fails naming the op instead of reading the wrong elements.
#include <gtest/gtest.h>

#include <vector>

#include "conformance.h"

namespace sft::conformance {
namespace {

constexpr DType f32 = DType::kF32, bf16 = DType::kBF16;

// A (rows, cols) matrix whose columns [begin, begin + n) are the block under test; the other
// columns hold values the op must neither read nor change.
struct Wide {
  int64_t rows, cols, begin, n;
};

Values block_of(const Values& all, const Wide& w) {
  Values out;
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t c = w.begin; c < w.begin + w.n; ++c) out.push_back(all[r * w.cols + c]);
  return out;
}

// `all` with the block replaced by `block`.
Values with_block(Values all, const Values& block, const Wide& w) {
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t c = 0; c < w.n; ++c) all[r * w.cols + w.begin + c] = block[r * w.n + c];
  return all;
}

SFT_CONFORMANCE_SUITE(ConformanceColumnBlocks);

TEST_P(ConformanceColumnBlocks, CastReadsAndWritesBlocks) {
  const Wide w{37, 70, 13, 40};  // odd rows and offsets: no whole-vector rows
  const Values src = random_values(static_cast<size_t>(w.rows * w.cols), 1, 1.0, f32);
  const Values dst0 = random_values(static_cast<size_t>(w.rows * w.cols), 2, 1.0, bf16);
  const Values block = block_of(src, w);
  // The bits a dense cast gives.
  Buffer dense_src(backend(), f32, w.rows, w.n, block),
      dense_dst(backend(), bf16, w.rows, w.n, Values(block.size(), 0.0));
  ops::cast(dense_dst.view(), dense_src.view());
  const Values rounded = dense_dst.read();
  // Block → dense, dense → block, block → block (the wide matrices of different dtypes).
  Buffer wide_src(backend(), f32, w.rows, w.cols, src);
  Buffer to_dense(backend(), bf16, w.rows, w.n, Values(block.size(), 0.0));
  ops::cast(to_dense.view(), wide_src.view().columns(w.begin, w.n));
  EXPECT_TRUE(bit_identical(to_dense.read(), rounded));
  Buffer wide_dst(backend(), bf16, w.rows, w.cols, dst0);
  ops::cast(wide_dst.view().columns(w.begin, w.n), dense_src.view());
  EXPECT_TRUE(bit_identical(wide_dst.read(), with_block(dst0, rounded, w)));
  Buffer wide_both(backend(), bf16, w.rows, w.cols, dst0);
  ops::cast(wide_both.view().columns(w.begin, w.n), wide_src.view().columns(w.begin, w.n));
  EXPECT_TRUE(bit_identical(wide_both.read(), with_block(dst0, rounded, w)));
  expect_error_naming("cast", [&] {  // a block needs the same shape, not only as many elements
    ops::cast(wide_dst.view().columns(0, 20), to_dense.view().reshaped(w.rows * 2, 20));
  });
}

TEST_P(ConformanceColumnBlocks, RopeRotatesOnlyTheBlock) {
  const int64_t T = 9, D = 8, heads = 3;
  const Wide w{T, 5 * D, D, heads * D};
  const Values x = random_values(static_cast<size_t>(w.rows * w.cols), 3, 1.0, f32);
  const Values cs = random_values(static_cast<size_t>(T * D / 2), 4, 1.0, f32);
  const Values sn = random_values(static_cast<size_t>(T * D / 2), 5, 1.0, f32);
  Buffer cos(backend(), f32, T, D / 2, cs), sin(backend(), f32, T, D / 2, sn);
  for (const bool backward : {false, true}) {
    Buffer dense(backend(), f32, T, heads * D, block_of(x, w)), wide(backend(), f32, T, w.cols, x);
    auto rope = backward ? ops::rope_backward : ops::rope_forward;
    rope(dense.view(), cos.view(), sin.view(), 0);
    rope(wide.view().columns(w.begin, w.n), cos.view(), sin.view(), 0);
    EXPECT_TRUE(bit_identical(wide.read(), with_block(x, dense.read(), w))) << backward;
  }
}

TEST_P(ConformanceColumnBlocks, MatmulOperandsAndResultAsBlocks) {
  // c (M, N) block of a wider c; a (M, K) block (or aᵀ, (K, M)); b (N, K) block (bᵀ), bf16 and
  // f32 operands, with and without accumulation.
  const int64_t M = 19, N = 24, K = 33;
  for (const DType dt : {f32, bf16})
    for (const bool accumulate : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + (accumulate ? " +=" : " ="));
      const Wide wc{M, N + 9, 5, N}, wa{M, K + 7, 7, K}, wb{N, K + 3, 2, K};
      const Values c0 = random_values(static_cast<size_t>(wc.rows * wc.cols), 6, 1.0, f32);
      const Values a = random_values(static_cast<size_t>(wa.rows * wa.cols), 7, 1.0, dt);
      const Values b = random_values(static_cast<size_t>(wb.rows * wb.cols), 8, 1.0, dt);
      Buffer A(backend(), dt, wa.rows, wa.cols, a), B(backend(), dt, wb.rows, wb.cols, b);
      Buffer C(backend(), f32, wc.rows, wc.cols, c0);
      Buffer dA(backend(), dt, M, K, block_of(a, wa)), dB(backend(), dt, N, K, block_of(b, wb));
      Buffer dC(backend(), f32, M, N, block_of(c0, wc));
      ops::matmul(dC.view(), dA.view(), dB.view(), false, true, accumulate);
      ops::matmul(C.view().columns(wc.begin, wc.n), A.view().columns(wa.begin, wa.n),
                  B.view().columns(wb.begin, wb.n), false, true, accumulate);
      // The library may block a strided product differently (fp32 sums in another order):
      // the block within f32 rounding of the dense product, the columns around it untouched.
      const Values got = C.read();
      EXPECT_LE(relative_error(block_of(got, wc), dC.read()), 1e-6);
      EXPECT_TRUE(bit_identical(with_block(got, block_of(c0, wc), wc), c0));
    }
}

TEST_P(ConformanceColumnBlocks, OtherOpsRefuseBlocks) {
  const int64_t T = 4, C = 16;
  Buffer wide(backend(), f32, T, 2 * C, Values(static_cast<size_t>(2 * T * C), 1.0));
  Buffer dense(backend(), f32, T, C, Values(static_cast<size_t>(T * C), 1.0));
  Buffer w(backend(), f32, 1, C, Values(static_cast<size_t>(C), 1.0));
  Buffer rstd(backend(), f32, T, 1, Values(static_cast<size_t>(T), 1.0));
  const View block = wide.view().columns(C, C);
  expect_error_naming("rmsnorm_forward", [&] {
    ops::rmsnorm_forward(dense.view(), rstd.view(), block, w.view(), 1e-6);
  });
  expect_error_naming("add", [&] { ops::add(block, dense.view()); });
  expect_error_naming("swiglu_forward",
                      [&] { ops::swiglu_forward(block, dense.view(), dense.view()); });
  expect_error_naming("scale", [&] { ops::scale(block, 2.0f); });
  expect_error_naming("column block", [&] { (void)block.reshaped(C, T); });
}

}  // namespace
}  // namespace sft::conformance
