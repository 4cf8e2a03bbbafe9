// Grouped GEMMs over the experts' token groups (ops/ops.h: grouped_matmul,
// grouped_matmul_weight_grad): one ops::cpu::matmul per expert with tokens, on row ranges of
// the permuted matrices and the expert's block of the stacked weight (ops/moe.h). Each product
// is what matmul computes for its dtypes (f32, bf16 operands with fp32 accumulation, f64), so
// the fp32 path is the reference and the bf16 one the bf16 matmul path; the groups run one after
// another, each split over the pool inside matmul. So the results are those of matmul: the same
// run to run at a given thread count (oneDNN's partition, and with it the order of a product's
// sums, is a function of the shape and the team size: bench_moe_grouped's hash of the forward
// and input-gradient outputs differs between 1 and 2 threads, before this file padded groups
// too). Experts without tokens are skipped (their weight gradient stays as it was).
//
// Padded group sizes (bf16 operands only; f32 and f64 multiply the exact groups): a group's
// size is the product's M (forward, input gradient) or K (weight gradient), and it changes with
// every layer and step. oneDNN compiles a kernel per shape (onednn_matmul.cpp caches them), so
// exact sizes cost a JIT compile for most groups of every step (hundreds per step for the
// qwen3-moe-1b shape, each more than a third of the product it serves) and overflow the cache.
// Rounded up to a multiple of kGroupQuantum (32) the shapes form a small set that stays cached:
// - M: the product runs on the group's rows plus the next rows of a and c (rows of later
//   groups: each output row depends only on its own row of a, so the group's rows are exact),
//   and c's extra rows are saved before and restored after, so every row of c ends as the call
//   leaves it with exact groups (accumulate included). The last group pads over the rows before
//   it instead (it ends the matrices); only matrices shorter than a padded group are copied.
// - K (weight gradient): dy and x of the group are copied into buffers padded with zero rows;
//   the extra terms are exact zeros, so dw gets the same sum of the same products.
// The buffers are per thread and only grow, so after the first step nothing is allocated.
// Why not f32: there padding measured no faster (bench_moe_grouped --f32: 0.40–0.43 CPU s per
// layer either way), and a padded M changes the library's partition of a product and with it the
// order of its sums; fp32 training is what the TRL parity goldens compare at 1e-4, where a
// router's near tie can turn such a last-bit change into another expert (seen on the gpt-oss
// LoRA-on-experts golden in the ASan build at two threads). So fp32 keeps the sums it had.
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace sft::ops::cpu {

namespace {

// Two AMX tiles high. bench_moe_grouped, one thread, CPU time: with a new routing per round
// 16, 32 and 64 all beat exact groups (−27 to −33% balanced; skewed −14% at 16, −30% at 32 and
// 64); with one fixed routing (no new shapes) 32 and 64 match exact groups on skewed groups
// while 16 lost 22% (oneDNN blocks some multiples of 16 in smaller M blocks). 32 wastes less
// than 64 on small groups.
constexpr int64_t kGroupQuantum = 32;

int64_t padded(int64_t n) {
  return (n + kGroupQuantum - 1) / kGroupQuantum * kGroupQuantum;
}

std::string shape(const View& v) {
  return "(" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + ")";
}

void check_block(const char* op, const View& w, const ExpertRouting& r, ExpertBlock b) {
  const bool ok = b.rows > 0 && b.first >= 0 && b.first + b.rows <= b.stride &&
                  b.stride * r.experts == w.rows && r.offsets != nullptr &&
                  r.offsets[r.experts] == r.rows();
  if (!ok)
    fail("ops", std::string(op) + ": expert block {rows " + std::to_string(b.rows) + ", stride " +
                    std::to_string(b.stride) + ", first " + std::to_string(b.first) + "} of a " +
                    shape(w) + " weight for " + std::to_string(r.experts) + " experts");
}

View block_of(const View& w, ExpertBlock b, int64_t e) {
  return w.row_range(e * b.stride + b.first, b.rows);
}

size_t row_bytes(const View& v) {
  return static_cast<size_t>(v.cols) * dtype_size(v.dtype);
}

// A dense (rows, cols) view of `dtype` on this thread's buffer `slot`, grown as needed.
View scratch(int slot, DType dtype, int64_t rows, int64_t cols) {
  thread_local std::vector<char> buffers[3];
  std::vector<char>& b = buffers[slot];
  const size_t bytes = static_cast<size_t>(rows * cols) * dtype_size(dtype);
  if (b.size() < bytes) b.resize(bytes);
  return View{b.data(), dtype, rows, cols};
}

// dst's rows = src's first dst.rows rows.
void copy_rows(View dst, const View& src) {
  const size_t bytes = row_bytes(dst);
  char* d = static_cast<char*>(dst.data);
  const char* s = static_cast<const char*>(src.data);
  const size_t dld = static_cast<size_t>(dst.ld()) * dtype_size(dst.dtype);
  const size_t sld = static_cast<size_t>(src.ld()) * dtype_size(src.dtype);
  for (int64_t i = 0; i < dst.rows; ++i) std::memcpy(d + i * dld, s + i * sld, bytes);
}

// dst's first src.rows rows = src, the rest zero (dst.rows ≥ src.rows, same cols and dtype).
void copy_rows_zero_rest(View dst, const View& src) {
  copy_rows(dst.row_range(0, src.rows), src);
  const size_t bytes = row_bytes(src);
  char* d = static_cast<char*>(dst.data);
  const size_t dld = static_cast<size_t>(dst.ld()) * dtype_size(dst.dtype);
  for (int64_t i = src.rows; i < dst.rows; ++i) std::memset(d + i * dld, 0, bytes);
}

// c's rows [row, row + n) (=, or += with accumulate) a's same rows times op(wb), with M padded:
// the product spans `extra` more rows after the group or, for the last group, before it (rows
// of other groups, saved and restored). Only a matrix shorter than one padded group is copied.
void padded_rows_product(View c, View a, View wb, int64_t row, int64_t n, bool trans_w,
                         bool accumulate) {
  const int64_t m = padded(n), extra = m - n;
  if (extra == 0 || a.dtype != DType::kBF16)
    return cpu::matmul(c.row_range(row, n), a.row_range(row, n), wb, false, trans_w, accumulate);
  const int64_t first = row + m <= c.rows ? row : row + n - m;
  if (first >= 0) {
    const View spill = c.row_range(first == row ? row + n : first, extra);
    const View saved = scratch(0, c.dtype, extra, c.cols);
    copy_rows(saved, spill);
    cpu::matmul(c.row_range(first, m), a.row_range(first, m), wb, false, trans_w, accumulate);
    copy_rows(spill, saved);
    return;
  }
  const View as = scratch(1, a.dtype, m, a.cols), cs = scratch(2, c.dtype, m, c.cols);
  copy_rows_zero_rest(as, a.row_range(row, n));
  if (accumulate) copy_rows_zero_rest(cs, c.row_range(row, n));
  cpu::matmul(cs, as, wb, false, trans_w, accumulate);
  copy_rows(c.row_range(row, n), cs);
}

}  // namespace

void grouped_matmul(View c, View a, View w, const ExpertRouting& r, ExpertBlock block, bool trans_w,
                    bool accumulate) {
  check_block("grouped_matmul", w, r, block);
  if (c.rows != r.rows() || a.rows != r.rows())
    fail("ops", "grouped_matmul: c " + shape(c) + " and a " + shape(a) + " need " +
                    std::to_string(r.rows()) + " permuted rows");
  // A padded group's extra rows belong to other groups: restored, whatever the order.
  for (int64_t e = 0; e < r.experts; ++e) {
    const int64_t n = r.count(e);
    if (n == 0) continue;
    padded_rows_product(c, a, block_of(w, block, e), r.offsets[e], n, trans_w, accumulate);
  }
}

void grouped_matmul_weight_grad(View dw, View dy, View x, const ExpertRouting& r,
                                ExpertBlock block) {
  check_block("grouped_matmul_weight_grad", dw, r, block);
  if (dy.rows != r.rows() || x.rows != r.rows())
    fail("ops", "grouped_matmul_weight_grad: dy " + shape(dy) + " and x " + shape(x) + " need " +
                    std::to_string(r.rows()) + " permuted rows");
  for (int64_t e = 0; e < r.experts; ++e) {
    const int64_t n = r.count(e);
    if (n == 0) continue;
    const View dy_e = dy.row_range(r.offsets[e], n), x_e = x.row_range(r.offsets[e], n);
    const int64_t k = padded(n);
    if (k == n || x.dtype != DType::kBF16) {
      cpu::matmul(block_of(dw, block, e), dy_e, x_e, true, false, true);
      continue;
    }
    const View dys = scratch(1, dy.dtype, k, dy.cols), xs = scratch(2, x.dtype, k, x.cols);
    copy_rows_zero_rest(dys, dy_e);
    copy_rows_zero_rest(xs, x_e);
    cpu::matmul(block_of(dw, block, e), dys, xs, true, false, true);
  }
}

}  // namespace sft::ops::cpu
