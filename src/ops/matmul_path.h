// Which kernels run this process's bf16 products and why, for the first lines of a run:
// ops::matmul_bf16 (ops/cpu/bf16_matmul_path.h) and the bf16 attention's tile product
// (ops/cpu/flash_attention_bf16_gemm.cpp), which are chosen separately.
#pragma once

#include <string>

namespace sft::ops {

// "KERNEL (WHY)", e.g. "fp32 GEMM on widened bf16 operands (this CPU has no AMX: ...)". Throws
// on a bad SFT_BF16_MATMUL.
std::string matmul_bf16_path();

// "KERNEL (WHY)" for the bf16 flash attention's tiles, e.g. "AMX tiles (tdpbf16ps)".
std::string attention_bf16_path();

}  // namespace sft::ops
