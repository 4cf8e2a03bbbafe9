// bitsandbytes' blockwise quantization formats on host memory, equal byte for byte to
// bitsandbytes 0.50 on the CPU (tests/ops/bnb_quant_test.cpp against tools/make_bnb4_goldens.py).
//
// 4-bit (what transformers' load_in_4bit stores): the weight, flattened, is cut into blocks of
// `blocksize` (64 in transformers); each block keeps its absmax (f32) and each element the
// index of the nearest of 16 code values (NF4 or FP4) after scaling by 1 / absmax; two indices
// share a byte, the even element in the high nibble. Nested statistics
// (`bnb_4bit_use_double_quant`) store the absmax themselves 8-bit: absmax minus their mean,
// quantized in blocks of 256 with the signed dynamic map.
//
// These are the reference kernels, used at load and by the tests (quantize_4bit spreads its
// blocks over the pool, the others run on one thread); the matmul that dequantizes blocks on
// the fly is a separate op (matmul_4bit.cpp, on dequant4.h's kernels). bitsandbytes has no C or C++
// library API (its kernels sit behind Python bindings), so the format is implemented here.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "ops/quant4.h"

namespace sft::ops::cpu {

using ops::Quant4Type;
// "nf4" / "fp4" as --bnb_4bit_quant_type and the quant_state's name spell them.
std::string_view quant4_type_name(Quant4Type type);

// The 16 values the indices stand for (bitsandbytes' `quant_map` of the type).
const std::array<float, 16>& quant4_code(Quant4Type type);

// The signed dynamic 8-bit map (bitsandbytes' create_dynamic_map(signed=True)), ascending.
const std::array<float, 256>& signed_dynamic_map();

// Blocks of `blocksize` over n elements, the last one shorter when blocksize does not divide n.
int64_t quant_block_count(int64_t n, int64_t blocksize);

// Quantizes x into packed (ceil(n / 2) bytes) and absmax (quant_block_count floats).
void quantize_4bit(std::span<const float> x, int64_t blocksize, Quant4Type type,
                   std::span<uint8_t> packed, std::span<float> absmax);
// Element i of a packed 4-bit tensor, dequantized: code[index i] × absmax[i / blocksize] in f32
// (the even element in the high nibble). The one place the packing is decoded.
inline float quant4_element(const uint8_t* packed, const float* absmax, const float* code,
                            int64_t i, int64_t blocksize) {
  const uint8_t byte = packed[i / 2];
  return code[i % 2 == 0 ? byte >> 4 : byte & 0xF] * absmax[i / blocksize];
}
// The inverse: out[i] = code[index i] × absmax[i / blocksize], in f32.
void dequantize_4bit(std::span<const uint8_t> packed, std::span<const float> absmax,
                     int64_t blocksize, Quant4Type type, std::span<float> out);

// 8-bit blockwise with a 256-entry ascending code: each element the index of the code value
// nearest to x / absmax (ties to the lower index), absmax per block.
void quantize_8bit(std::span<const float> x, int64_t blocksize, std::span<const float, 256> code,
                   std::span<uint8_t> out, std::span<float> absmax);
void dequantize_8bit(std::span<const uint8_t> q, std::span<const float> absmax, int64_t blocksize,
                     std::span<const float, 256> code, std::span<float> out);

// Nested statistics: the absmax of a 4-bit tensor stored 8-bit.
struct NestedAbsmax {
  int64_t blocksize = 256;        // bitsandbytes' nested blocksize
  float offset = 0;               // the mean of the absmax, subtracted before quantizing
  std::vector<uint8_t> codes;     // one per absmax (the checkpoint's `absmax`, uint8)
  std::vector<float> absmax;      // one per block of 256 (the checkpoint's `nested_absmax`)
  std::array<float, 256> code{};  // the map used (`nested_quant_map`)
};
// bitsandbytes' offset is torch's float32 mean of the absmax, whose summation order follows
// the machine's vector width and thread count; this is the correctly rounded mean, which
// equals it or is one ulp away (tests/model/quant4_weight_test.cpp).
float absmax_mean(std::span<const float> absmax);
// Quantizes absmax - offset; given bitsandbytes' offset, the codes equal its codes.
NestedAbsmax nest_absmax(std::span<const float> absmax, float offset);
// The absmax back in f32: dequantized, plus the offset.
void unnest_absmax(const NestedAbsmax& nested, std::span<float> absmax);

}  // namespace sft::ops::cpu
