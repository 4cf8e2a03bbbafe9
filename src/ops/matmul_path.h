// Which kernel ops::matmul_bf16 runs in this process and why (ops/cpu/bf16_matmul_path.h), for
// the first lines of a run.
#pragma once

#include <string>

namespace sft::ops {

// "KERNEL (WHY)", e.g. "fp32 GEMM on widened bf16 operands (this CPU has no AMX: ...)". Throws
// on a bad SFT_BF16_MATMUL.
std::string matmul_bf16_path();

}  // namespace sft::ops
