// Grouped GEMMs over the experts' token groups (ops/ops.h: grouped_matmul,
// grouped_matmul_weight_grad): one ops::cpu::matmul per expert with tokens, on row ranges of
// the permuted matrices and the expert's block of the stacked weight (ops/moe.h). Each product
// is exactly what matmul computes for its dtypes (f32, bf16 operands with fp32 accumulation,
// f64), so the fp32 path is the reference and the bf16 one the bf16 matmul path; the groups run
// one after another, each split over the pool inside matmul (over output rows/columns only),
// so the results do not depend on the thread count. Experts without tokens are skipped (their
// weight gradient stays as it was).
#include <string>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace sft::ops::cpu {

namespace {

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

}  // namespace

void grouped_matmul(View c, View a, View w, const ExpertRouting& r, ExpertBlock block, bool trans_w,
                    bool accumulate) {
  check_block("grouped_matmul", w, r, block);
  if (c.rows != r.rows() || a.rows != r.rows())
    fail("ops", "grouped_matmul: c " + shape(c) + " and a " + shape(a) + " need " +
                    std::to_string(r.rows()) + " permuted rows");
  for (int64_t e = 0; e < r.experts; ++e) {
    const int64_t n = r.count(e);
    if (n == 0) continue;
    cpu::matmul(c.row_range(r.offsets[e], n), a.row_range(r.offsets[e], n), block_of(w, block, e),
                false, trans_w, accumulate);
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
    cpu::matmul(block_of(dw, block, e), dy.row_range(r.offsets[e], n), x.row_range(r.offsets[e], n),
                true, false, true);
  }
}

}  // namespace sft::ops::cpu
