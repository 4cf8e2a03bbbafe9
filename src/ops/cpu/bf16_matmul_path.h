// How this process runs bf16 × bf16 → fp32 matmuls (ops::matmul_bf16: --bf16's projections,
// the LM head), decided once from what the CPU is fast at:
//   native:  oneDNN's bf16 kernels (AMX tiles, or AVX512-BF16's vdpbf16ps);
//   widened: the bf16 operands converted (exactly) to fp32 and multiplied by the fp32 GEMM.
// Both are the contract of --bf16: every product is a product of two bf16 values, exact in fp32,
// and the sums are fp32; only the order of the sums differs. Which is faster depends on the core
// (bench_peak_flops, docs/benchmarks.md): AMX is ~15× fp32 FMA; AMD's AVX512-BF16 (Zen 4) runs
// vdpbf16ps at twice the FMA rate; Intel's AVX512-BF16 without AMX (a Xeon whose AMX is hidden)
// at half of it, and oneDNN 2.6 has no bf16 matmul below AVX-512 at all. So native with AMX or
// on AMD, widened elsewhere. The choice is a function of the CPU model, never of a timing, so a
// rerun on the same machine sums in the same order (bit-identical).
// SFT_BF16_MATMUL=native|widened overrides the choice (benchmarks, tests); native where oneDNN
// has no bf16 kernel, or any other value, is an error naming the variable.
#pragma once

#include <string>
#include <string_view>

namespace sft::ops::cpu {

enum class Bf16MatmulPath { kNative, kWidened };

struct Bf16MatmulChoice {
  Bf16MatmulPath path;
  std::string kernel;  // what runs: oneDNN's implementation name, or "fp32 GEMM on widened bf16"
  std::string why;     // one clause for the first lines of a run
};

// This process's choice: made once, from oneDNN's bf16 kernel for this CPU, its vendor and
// SFT_BF16_MATMUL.
const Bf16MatmulChoice& bf16_matmul_choice();

// The rule itself (tests): `forced` is SFT_BF16_MATMUL's value ("" when unset), `native` the
// oneDNN implementation a bf16 matmul gets here ("none" without one), `amd` the vendor.
Bf16MatmulChoice choose_bf16_matmul(std::string_view forced, const std::string& native, bool amd);

}  // namespace sft::ops::cpu
