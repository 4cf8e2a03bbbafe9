// oneDNN's matmul primitive behind a small C++ surface for the CPU backend (ops/cpu only).
//
// C[M, N] = op(A) · op(B) (+ C with accumulate), row-major, the same argument meaning and
// strides as ops::matmul (ops.h), for f32 × f32 → f32 and bf16 × bf16 → f32 (fp32
// accumulation). oneDNN picks its kernel (AMX, AVX512-BF16, AVX-512, AVX2, reference) at run
// time from the CPU and ONEDNN_MAX_CPU_ISA. Runs on the calling thread with an OpenMP team of
// default_thread_pool().size() threads; callers must not be pool workers (see the .cpp).
#pragma once

#include <cstdint>
#include <string>

namespace sft::ops::onednn {

enum class Operand { f32, bf16 };

// a and b point to Operand values (float or bf16 bits); dims and strides are already resolved
// (lda/ldb/ldc > 0). M, N, K must be positive. bf16 needs supports_bf16().
void matmul(Operand type, float* c, const void* a, const void* b, int64_t M, int64_t N, int64_t K,
            bool trans_a, bool trans_b, bool accumulate, int64_t lda, int64_t ldb, int64_t ldc);

// Whether oneDNN has a bf16 matmul here: 2.6 has none below AVX-512 (not even its reference
// kernel), so on AVX2-only CPUs, or under ONEDNN_MAX_CPU_ISA=AVX2, callers widen to f32.
bool supports_bf16();

// The implementation oneDNN chose for a dense problem of this shape, e.g.
// "brg:avx512_core_amx_bf16" (benchmarks and test diagnostics); "none" if it has none.
std::string implementation(Operand type, int64_t M, int64_t N, int64_t K, bool trans_a,
                           bool trans_b);

// The ISA oneDNN dispatches to in this process, e.g. "avx512_core_amx" or "avx2".
std::string effective_isa();

// Primitives held in the cache (tests check that repeated shapes reuse one).
size_t cached_primitives();

}  // namespace sft::ops::onednn
