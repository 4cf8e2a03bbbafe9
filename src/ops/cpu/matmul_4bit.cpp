// ops::matmul_4bit on the CPU (ops/ops.h): W dequantized a panel of rows at a time into a
// buffer of a's dtype, each panel multiplied with ops::matmul / matmul_bf16 (OpenBLAS, oneDNN,
// AMX where present), so the unpacked matrix never exists whole: QLoRA's point is that a
// 4-bit base fits where its f32 copy does not. Panels are ~1 MiB; the sum over panels of
// a · W (the input gradient) runs in panel order, so results are deterministic.
#include <algorithm>
#include <array>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "ops/cpu/bnb_quant.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/ops.h"

namespace sft::ops::cpu {

namespace {

constexpr int64_t kPanelElements = int64_t{1} << 18;

std::string shape(const View& v) {
  return "(" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + ")";
}

void check(bool ok, const std::string& what) {
  if (!ok) fail("ops", "matmul_4bit: " + what);
}

// W's rows [r0, r1) as T (float, or bf16 bits), row-major, into out.
template <typename T>
void dequantize_rows(const Weight4Bit& w, int64_t r0, int64_t r1, T* out) {
  const auto* packed = w.packed.as<uint8_t>();
  const float* absmax = w.absmax.as<float>();
  const std::array<float, 16>& code = quant4_code(w.type);
  parallel_for_rows(r1 - r0, 8, [&](int64_t b, int64_t e) {
    for (int64_t r = r0 + b; r < r0 + e; ++r) {
      T* row = out + (r - r0) * w.cols;
      for (int64_t c = 0; c < w.cols; ++c) {
        const float v = quant4_element(packed, absmax, code.data(), r * w.cols + c, w.blocksize);
        if constexpr (std::is_same_v<T, float>)
          row[c] = v;
        else
          row[c] = f32_to_bf16(v);
      }
    }
  });
}

template <typename T>
void panels(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate) {
  const int64_t M = a.rows;
  const int64_t panel_rows = std::clamp<int64_t>(kPanelElements / w.cols, 1, w.rows);
  // One buffer per thread that calls, reused across calls: no allocation per step.
  thread_local std::vector<T> buffer;
  buffer.resize(static_cast<size_t>(panel_rows * w.cols));
  for (int64_t r0 = 0; r0 < w.rows; r0 += panel_rows) {
    const int64_t r1 = std::min(w.rows, r0 + panel_rows), n = r1 - r0;
    dequantize_rows(w, r0, r1, buffer.data());
    const T* a_data = a.as<T>();
    auto* c_data = c.as<float>();
    const auto product = [&](float* cc, const T* aa, int64_t N, int64_t K, bool tb, bool acc) {
      if constexpr (std::is_same_v<T, float>)
        ops::matmul(cc, aa, buffer.data(), M, N, K, false, tb, acc, a.ld(), w.cols, c.ld());
      else
        ops::matmul_bf16(cc, aa, buffer.data(), M, N, K, false, tb, acc, a.ld(), w.cols, c.ld());
    };
    if (trans_w)  // c[:, r0:r1] = a · panelᵀ
      product(c_data + r0, a_data, n, w.cols, true, accumulate);
    else  // c += a[:, r0:r1] · panel
      product(c_data, a_data + r0, w.cols, n, false, accumulate || r0 > 0);
  }
}

}  // namespace

void matmul_4bit(View c, View a, const Weight4Bit& w, bool trans_w, bool accumulate) {
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
  check(c.dtype == DType::kF32, "c must be f32, got " + std::string(dtype_name(c.dtype)));
  if (a.dtype == DType::kF32) return panels<float>(c, a, w, trans_w, accumulate);
  if (a.dtype == DType::kBF16) return panels<uint16_t>(c, a, w, trans_w, accumulate);
  check(false, "a must be f32 or bf16, got " + std::string(dtype_name(a.dtype)));
}

}  // namespace sft::ops::cpu
