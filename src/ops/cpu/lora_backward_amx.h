// LoRA's backward products over the output gradient in one pass, on AMX tiles.
//
// For an adapted projection with output gradient g (N, O), the saved u = scale · drop(x) Aᵀ
// (N, r) and B (O, r), all bf16, the backward needs two products over g: dB += gᵀ · u and
// du = g · B (fp32 sums). As two matmuls each reads g (12.6 MB for Qwen3-1.7B's gate/up at
// 1024 tokens) once, and oneDNN runs both skinny shapes far below the tile rate. Here each
// 32 × 32 block of g is loaded once, re-laid in L1 as the two tile operands it is (plain rows
// for g · B, row pairs interleaved for uᵀ · g), and both products take it from there.
//
// It serves ops::lora_backward_products on the CPU (view_kernels.cpp) for bf16 where
// AMX is usable: the fusion pays where the skinny products run below memory speed, which is
// oneDNN here; the CUDA slot is the two cuBLASLt products, which run near the bandwidth already.
//
// Numerics (deterministic for any thread count): dB's sums over N run in ascending 32-row
// tiles inside one task; du's sums over O are split into fixed 256-column tasks (a constant,
// not a function of the thread count), each task's partial sum is kept and the partials are
// added in task order. Products of bf16 pairs are exact in fp32; tdpbf16ps treats denormal
// inputs as zero, as oneDNN's AMX kernels do. The sums' order differs from oneDNN's, so the
// bits differ from a matmul's in the last places.
#pragma once

#include <cstdint>

namespace sft::ops::cpu {

// Whether lora_backward_amx runs here (AMX usable in this process, cpu/amx.h).
bool lora_backward_amx_serves();

// db (O, r) f32, row stride lddb: += gᵀ · u. du (N, r) f32, row stride lddu: = g · B.
// g (N, O) bf16 bits, row stride ldg; u (N, r), row stride ldu; b (O, r), row stride ldb.
// Any N, O ≥ 1, r ≥ 1 (ranks above 16 take one pass over g per 16 columns). Runs on the
// default thread pool; call it from outside it.
void lora_backward_amx(float* db, int64_t lddb, float* du, int64_t lddu, const uint16_t* g,
                       int64_t ldg, const uint16_t* u, int64_t ldu, const uint16_t* b, int64_t ldb,
                       int64_t N, int64_t O, int64_t r);

}  // namespace sft::ops::cpu
