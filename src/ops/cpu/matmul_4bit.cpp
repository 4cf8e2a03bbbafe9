// ops::matmul_4bit on the CPU (ops/ops.h): W dequantized a panel at a time into a buffer of a's
// dtype (dequant4.h: AVX-512 where present) and each panel multiplied with ops::matmul /
// matmul_bf16 (oneDNN, AMX where present), so the unpacked matrix never exists whole: QLoRA's
// point is that a 4-bit base fits where its f32 copy does not.
//
// A panel is a block of the product's output columns with the whole of K: rows of W for
// a · Wᵀ, columns of W for a · W. So each output element is one library call's sum over all
// of K (no partial sums carried across panels, deterministic for a given thread count), C is
// written once, and every call has a wide N and the full K, the shapes the AMX kernels run
// well. The panel holds ~kPanelElements values, cache-sized, whatever W's shape.
// Dequantization and the product alternate, each on all threads (the pool, then oneDNN's team).
// With bf16 activations on a CPU with AMX, matmul_4bit_amx.cpp serves the call instead
// (VNNI tiles and our own tile product, no repacking by the library). A bf16 c gets the fp32
// result rounded once: here through an fp32 scratch, on the AMX path as the tiles are stored.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "ops/cpu/bnb_quant.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/dequant4.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/matmul_4bit_amx.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

// 2 Mi values: 4 MiB of bf16, 1024 columns at K = 2048, 320 at K = 6144 (Qwen3-1.7B). On an
// AMX Xeon (bench_matmul_4bit, one thread, CPU time over Qwen3-1.7B's projections, 4-bit /
// dense bf16 with W whole): 1.03 at 2^20, 0.87–0.90 at 2^21, 0.96 at 2^22 (docs/benchmarks.md,
// QLoRA).
constexpr int64_t kPanelElements = int64_t{1} << 21;
// Panel widths are multiples of this, so the GEMM's column blocks stay whole.
constexpr int64_t kColumnQuantum = 64;
// ... and at least this wide where K is long: Qwen3-8B's down projection (K = 12288) ran its
// forward at 0.76–0.81 of the dense rate in 128-column panels, 0.88–0.97 in 256.
constexpr int64_t kMinColumns = 256;

std::string shape(const View& v) {
  return "(" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + ")";
}

void check(bool ok, const std::string& what) {
  if (!ok) fail("ops", "matmul_4bit: " + what);
}

int64_t panel_columns(int64_t N, int64_t K) {
  const int64_t fit = std::max<int64_t>(kMinColumns, kPanelElements / K);
  return std::min(N, fit / kColumnQuantum * kColumnQuantum);
}

// Output columns [n0, n0 + nb) of a · op(W) need, with the whole of K:
//   trans_w: W's rows n0.., each K long and contiguous → buffer (nb × K), used transposed;
//   else:    W's columns n0.. of every row → buffer (K × nb).
template <typename T>
void dequantize_panel(const Packed4& w, int64_t cols, int64_t K, bool trans_w, int64_t n0,
                      int64_t nb, T* buffer) {
  if (trans_w) {
    parallel_for_rows(nb, 16, [&](int64_t b, int64_t e) {
      dequantize4(w, (n0 + b) * cols, (e - b) * cols, buffer + b * cols);
    });
  } else {
    parallel_for_rows(K, 64, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) dequantize4(w, r * cols + n0, nb, buffer + r * nb);
    });
  }
}

template <typename T>
void panels(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate) {
  const int64_t M = a.rows, K = trans_w ? w.cols : w.rows, N = trans_w ? w.rows : w.cols;
  if (M == 0) return;
  const int64_t width = panel_columns(N, K);
  const Packed4 packed = packed4_of(w);
  // One buffer per thread that calls, reused across calls: no allocation per step.
  thread_local std::vector<T> buffer;
  buffer.resize(static_cast<size_t>(width * K));
  for (int64_t n0 = 0; n0 < N; n0 += width) {
    const int64_t nb = std::min(width, N - n0);
    dequantize_panel(packed, w.cols, K, trans_w, n0, nb, buffer.data());
    const int64_t ldb = trans_w ? K : nb;
    if constexpr (std::is_same_v<T, float>)
      ops::matmul(c.as<float>() + n0, a.as<float>(), buffer.data(), M, nb, K, false, trans_w,
                  accumulate, a.ld(), ldb, c.ld());
    else
      ops::matmul_bf16(c.as<float>() + n0, a.as<uint16_t>(), buffer.data(), M, nb, K, false,
                       trans_w, accumulate, a.ld(), ldb, c.ld());
  }
}

}  // namespace

void matmul_4bit(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate,
                 const LowRankTerm& extra) {
  check(w.rows > 0 && w.cols > 0 && w.blocksize > 0, "W is " + std::to_string(w.rows) + " × " +
                                                         std::to_string(w.cols) + " in blocks of " +
                                                         std::to_string(w.blocksize));
  check(w.packed.dtype == DType::kU8 && w.packed.dense() &&
            w.packed.numel() == (w.rows * w.cols + 1) / 2,
        "packed must be " + std::to_string((w.rows * w.cols + 1) / 2) + " dense u8 bytes, got " +
            std::string(dtype_name(w.packed.dtype)) + " " + shape(w.packed));
  check(w.absmax.dtype == DType::kF32 && w.absmax.dense() &&
            w.absmax.numel() == quant_block_count(w.rows * w.cols, w.blocksize),
        "absmax must be " + std::to_string(quant_block_count(w.rows * w.cols, w.blocksize)) +
            " dense f32 values, got " + std::string(dtype_name(w.absmax.dtype)) + " " +
            shape(w.absmax));
  const int64_t K = trans_w ? w.cols : w.rows, N = trans_w ? w.rows : w.cols;
  check(a.cols == K && c.rows == a.rows && c.cols == N,
        "shapes " + shape(c) + " = " + shape(a) + " · W" + (trans_w ? "ᵀ" : "") + " (W " +
            std::to_string(w.rows) + " × " + std::to_string(w.cols) + ") do not fit");
  check(c.dtype == DType::kF32 || c.dtype == DType::kBF16,
        "c must be f32 or bf16, got " + std::string(dtype_name(c.dtype)));
  check(c.dtype == DType::kF32 || !accumulate,
        "a bf16 c cannot be accumulated into (its sum would be rounded twice); hint: accumulate "
        "into an f32 c");
  check(a.dtype == DType::kF32 || a.dtype == DType::kBF16,
        "a must be f32 or bf16, got " + std::string(dtype_name(a.dtype)));
  if (!extra.empty()) {
    const int64_t r = extra.a.cols;
    check(extra.a.dtype == a.dtype && extra.b.dtype == a.dtype,
          "the low-rank term's views must be in a's dtype " + std::string(dtype_name(a.dtype)));
    check(extra.a.rows == a.rows && (trans_w ? extra.b.rows == N && extra.b.cols == r
                                             : extra.b.rows == r && extra.b.cols == N),
          "the low-rank term " + shape(extra.a) + " · " + shape(extra.b) + (trans_w ? "ᵀ" : "") +
              " does not fit c " + shape(c));
  }
  if (matmul_4bit_amx_applies(a)) return matmul_4bit_amx(c, a, w, trans_w, accumulate, extra);
  matmul_4bit_library(c, a, w, trans_w, accumulate, extra);
}

void matmul_4bit_library(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate,
                         const LowRankTerm& extra) {
  if (c.dtype == DType::kBF16) {  // the fp32 product, then rounded once (what ops::cast does)
    thread_local std::vector<float> sums;
    sums.resize(static_cast<size_t>(c.rows * c.cols));
    const View c32 = view_of(sums.data(), c.rows, c.cols);
    matmul_4bit_library(c32, a, w, trans_w, false, extra);
    cast_rows(c.as<uint16_t>(), c.ld(), sums.data(), c.cols, c.rows, c.cols);
    return;
  }
  if (a.dtype == DType::kF32)
    panels<float>(c, a, w, trans_w, accumulate);
  else
    panels<uint16_t>(c, a, w, trans_w, accumulate);
  // The term as its own product added to c: what LoRA did before the fold, call for call.
  if (!extra.empty()) ops::matmul(c, extra.a, extra.b, false, trans_w, true);
}

}  // namespace sft::ops::cpu
