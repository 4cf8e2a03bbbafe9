// The bf16 matmul path of this process. See bf16_matmul_path.h.
#include "ops/cpu/bf16_matmul_path.h"

#include <cstdlib>

#include "core/error.h"
#include "ops/cpu/onednn_matmul.h"

namespace sft::ops::cpu {

Bf16MatmulChoice choose_bf16_matmul(std::string_view forced, const std::string& native, bool amd) {
  const bool has_native = native != "none";
  const std::string widened = "fp32 GEMM on widened bf16 operands";
  if (forced == "native") {
    if (!has_native)
      throw Error("ops",
                  "SFT_BF16_MATMUL=native, but oneDNN has no bf16 matmul on this CPU (it needs "
                  "AVX512-BF16 or AMX); unset it or use SFT_BF16_MATMUL=widened");
    return {Bf16MatmulPath::kNative, native, "forced by SFT_BF16_MATMUL=native"};
  }
  if (forced == "widened")
    return {Bf16MatmulPath::kWidened, widened, "forced by SFT_BF16_MATMUL=widened"};
  if (!forced.empty())
    throw Error("ops", "SFT_BF16_MATMUL='" + std::string(forced) +
                           "' is not a bf16 matmul path; use native or widened, or unset it");
  if (native.find("amx") != std::string::npos)
    return {Bf16MatmulPath::kNative, native, "AMX multiplies bf16 faster than fp32 FMA"};
  if (has_native && amd)
    return {Bf16MatmulPath::kNative, native,
            "AMD's vdpbf16ps runs at twice the fp32 FMA rate: docs/benchmarks.md"};
  if (has_native)
    return {Bf16MatmulPath::kWidened, widened,
            "this CPU has AVX512-BF16 (" + native +
                ") but no AMX: its bf16 dot product is no faster than fp32 FMA"};
  return {Bf16MatmulPath::kWidened, widened,
          "this CPU has no bf16 matmul instructions (no AVX512-BF16, no AMX)"};
}

const Bf16MatmulChoice& bf16_matmul_choice() {
  static const Bf16MatmulChoice chosen = [] {
    // The kernel oneDNN runs for a bf16 product of a typical projection's shape.
    const std::string native =
        onednn::supports_bf16()
            ? onednn::implementation(onednn::Operand::bf16, 1024, 1024, 1024, false, true)
            : "none";
    __builtin_cpu_init();
    const char* env = std::getenv("SFT_BF16_MATMUL");
    return choose_bf16_matmul(env ? env : "", native, __builtin_cpu_is("amd"));
  }();
  return chosen;
}

}  // namespace sft::ops::cpu
