// Matmul on CUDA through cuBLASLt (ops.h's contract, row-major views).
//
// cuBLASLt is column-major; a row-major (M, N) matrix is the column-major (N, M) one, so
// C = op(A) op(B) is computed as Cᵀ = op(B)ᵀ op(A)ᵀ: cuBLASLt's "A" is our b, its "B" our a,
// each stored matrix described as it lies in memory and its transpose flag kept. A column block
// (View::columns) is a stored matrix whose leading dimension is its row stride (ld()), so any
// operand and the result may be one.
// One handle and a 32 MiB workspace per process; the algorithm is chosen once per
// (dtype, shape, transposes, accumulate, leading dimensions, alignment) by the heuristic and
// reused, so the same call takes the same kernel every time (cuBLAS documents bitwise reproducible
// results on one GPU model for a fixed algorithm unless atomics are asked for, which we never do).
// f32 computes in fp32 (CUBLAS_COMPUTE_32F: no TF32); bf16 × bf16 accumulates in fp32 into f32.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_memory.h"
#include "ops/cuda/cuda_ops.h"
#include "ops/cuda/cuda_views.h"

namespace sft::ops::cuda {

namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// The largest power of two (≤ 256) dividing the address of every row (the first row's and the
// row stride in bytes): what the heuristic may assume.
uint32_t alignment_of(const View& v) {
  const auto address = reinterpret_cast<uintptr_t>(v.data);
  const auto row_bytes = static_cast<uintptr_t>(v.rows > 1 ? v.ld() : 0) * dtype_size(v.dtype);
  uint32_t a = 256;
  while (a > 1 && (address % a != 0 || row_bytes % a != 0)) a /= 2;
  return a;
}

// A stored matrix's leading dimension as cuBLASLt reads it: the row stride (a dense view's is
// its columns).
int64_t leading_dimension(const View& v) {
  return v.rows > 1 ? v.ld() : v.cols;
}

// The problem and its matrices: dtype, M, N, K, transposes, accumulate, the leading dimensions
// of a, b, c and their alignments.
using Key = std::tuple<int, int64_t, int64_t, int64_t, bool, bool, bool, int64_t, int64_t, int64_t,
                       uint32_t, uint32_t, uint32_t>;

struct Problem {
  cudaDataType_t in;
  int64_t M, N, K;
  bool ta, tb;
  int64_t ld_a = 0, ld_b = 0, ld_c = 0;
  uint32_t align_a = 0, align_b = 0, align_c = 0;

  Key key(bool accumulate) const {
    return std::make_tuple(static_cast<int>(in), M, N, K, ta, tb, accumulate, ld_a, ld_b, ld_c,
                           align_a, align_b, align_c);
  }
};

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

// Process-wide; never destroyed (tearing cuBLASLt down after the CUDA context at exit fails).
struct Lt {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::map<Key, Plan> plans;
  std::mutex mutex;  // ops are called from one thread, but plans must never race
};

Lt& lt() {
  static Lt* state = [] {
    auto* s = new Lt();
    SFT_CUBLAS_CHECK(cublasLtCreate(&s->handle));
    s->workspace = device_alloc(kWorkspaceBytes);
    return s;
  }();
  return *state;
}

Plan make_plan(Lt& s, const Problem& q) {
  const auto [in, M, N, K, ta, tb, ld_a, ld_b, ld_c, align_a, align_b, align_c] = q;
  Plan p;
  SFT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // Lt's A is our b: stored (K, N) row-major = (N, K) column-major, or (N, K) row-major when tb.
  const cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  SFT_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  SFT_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  const uint64_t a_rows = tb ? K : N, a_cols = tb ? N : K;
  const uint64_t b_rows = ta ? M : K, b_cols = ta ? K : M;
  // Each stored row-major matrix is column-major with its row stride as the leading dimension.
  SFT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, in, a_rows, a_cols, ld_b));
  SFT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, in, b_rows, b_cols, ld_a));
  SFT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, N, M, ld_c));

  cublasLtMatmulPreference_t pref = nullptr;
  SFT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t workspace = kWorkspaceBytes;
  SFT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  // Our b is Lt's A and our a Lt's B.
  SFT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_b, sizeof(align_b)));
  SFT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_a, sizeof(align_a)));
  SFT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c)));
  SFT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof(align_c)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(s.handle, p.desc, p.a, p.b, p.c, p.c,
                                                               pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0)
    fail("cuda", std::string("cuBLASLt has no algorithm for the ") +
                     (in == CUDA_R_16BF ? "bf16" : "f32") + " matmul M=" + std::to_string(M) +
                     " N=" + std::to_string(N) + " K=" + std::to_string(K) + (ta ? " ta" : "") +
                     (tb ? " tb" : "") + " (leading dimensions " + std::to_string(ld_a) + "/" +
                     std::to_string(ld_b) + "/" + std::to_string(ld_c) + ", alignments " +
                     std::to_string(align_a) + "/" + std::to_string(align_b) + "/" +
                     std::to_string(align_c) + " bytes): " + cublasLtGetStatusString(status));
  p.algo = result.algo;
  return p;
}

}  // namespace

void matmul(View c, View a, View b, bool trans_a, bool trans_b, bool accumulate) {
  require_cuda("matmul", {c, a, b});
  const int64_t M = trans_a ? a.cols : a.rows, K = trans_a ? a.rows : a.cols;
  const int64_t Kb = trans_b ? b.cols : b.rows, N = trans_b ? b.rows : b.cols;
  require(K == Kb && c.rows == M && c.cols == N, "matmul", [&] {
    return "shapes " + shape(c) + " = " + shape(a) + (trans_a ? "ᵀ" : "") + " · " + shape(b) +
           (trans_b ? "ᵀ" : "") + " do not fit";
  });
  require(a.dtype == b.dtype && (a.dtype == DType::kF32 || a.dtype == DType::kBF16), "matmul", [&] {
    return "the CUDA matmul takes f32 × f32 or bf16 × bf16, got " +
           std::string(dtype_name(a.dtype)) + " × " + std::string(dtype_name(b.dtype));
  });
  require_dtype("matmul", DType::kF32, {c});
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!accumulate) cuda::zero(c);
    return;
  }
  Lt& s = lt();
  const cudaDataType_t in = a.dtype == DType::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
  Problem q{in, M, N, K, trans_a, trans_b};
  q.ld_a = leading_dimension(a), q.ld_b = leading_dimension(b), q.ld_c = leading_dimension(c);
  q.align_a = alignment_of(a), q.align_b = alignment_of(b), q.align_c = alignment_of(c);
  const Key key = q.key(accumulate);
  const Plan* plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.plans.find(key);
    if (it == s.plans.end()) it = s.plans.emplace(key, make_plan(s, q)).first;
    plan = &it->second;
  }
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  SFT_CUBLAS_CHECK(cublasLtMatmul(s.handle, plan->desc, &alpha, b.data, plan->a, a.data, plan->b,
                                  &beta, c.data, plan->c, c.data, plan->c, &plan->algo, s.workspace,
                                  kWorkspaceBytes, /*stream=*/nullptr));
}

void lora_backward_products(View db, View du, View g, View u, View b) {
  cuda::matmul(db, g, u, true, false, true);
  cuda::matmul(du, g, b, false, false, false);
}

}  // namespace sft::ops::cuda
