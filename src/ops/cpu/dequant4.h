// Dequantization of a run of a bitsandbytes 4-bit tensor (ops/quant4.h) into the compute dtype:
// the inner loop of ops::matmul_4bit, which unpacks W a panel at a time.
//
// Contract: out[j] = code[index of element first + j] × absmax[(first + j) / blocksize] for
// j < n, one f32 multiply each (bnb_quant.h's quant4_element); the bf16 form stores that f32
// value rounded by f32_to_bf16 (core/half.h). Every path gives these exact bits: the AVX-512
// kernel (per block, the 16 products code × absmax in one register, rounded to bf16 once when
// bf16 is asked for; then each element a vpermps / vpermw lookup by its nibble) and the scalar
// loop it falls back to without AVX-512 or under SFT_CPU_ISA=generic (tests/ops/dequant4_test.cpp
// holds them to each other bit for bit). One AVX-512 thread writes ~11 G bf16 values a second,
// ~18× the scalar loop (bench_matmul_4bit --only dequant). `first` and n may be any
// values: an odd start (a low nibble) and a run that crosses or ends inside a block are fine.
// Nested absmax are unnested at load (model/quant4 holds them as f32), so this sees f32 only.
// One thread; callers split the work.
#pragma once

#include <cstdint>

#include "ops/quant4.h"

namespace sft::ops::cpu {

// The packed tensor as the kernels read it (a Weight4Bit's raw pointers and layout).
struct Packed4 {
  const uint8_t* packed = nullptr;  // two indices a byte, the even element in the high nibble
  const float* absmax = nullptr;    // one per block
  const float* code = nullptr;      // the 16 values of the quant type
  int64_t blocksize = 64;
};
Packed4 packed4_of(const Weight4Bit& w);

// The dispatching entry points: AVX-512 where cpu::use_avx512(), else scalar.
void dequantize4(const Packed4& w, int64_t first, int64_t n, float* out);
void dequantize4(const Packed4& w, int64_t first, int64_t n, uint16_t* out);

// Each path by name, for the tests (the AVX-512 ones only where cpu::use_avx512()).
void dequantize4_scalar(const Packed4& w, int64_t first, int64_t n, float* out);
void dequantize4_scalar(const Packed4& w, int64_t first, int64_t n, uint16_t* out);
void dequantize4_avx512(const Packed4& w, int64_t first, int64_t n, float* out);
void dequantize4_avx512(const Packed4& w, int64_t first, int64_t n, uint16_t* out);

}  // namespace sft::ops::cpu
