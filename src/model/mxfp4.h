// MXFP4, the 4-bit format the released gpt-oss checkpoints (openai/gpt-oss-20b, -120b) store
// their experts in, decoded as transformers 5.24 decodes it when it loads such a folder with
// Mxfp4Config(dequantize=True) — what its quantizer switches to by itself on a CPU without
// use_kernels, or without triton or the `kernels` package (quantizers/quantizer_mxfp4.py;
// integrations/mxfp4.py: Mxfp4Dequantize → convert_moe_packed_tensors, into the dtype of the
// parameter loaded, after which the quantization_config is removed from the model's config).
// sft reads the experts this way at load and trains them as any other weights.
//
// On disk (config.json's quantization_config {"quant_method": "mxfp4", ...}), each expert stack
// of a layer, gate_up_proj and down_proj, is a pair of uint8 tensors:
//   <stack>_blocks  U8 (E, R, G, 16)  32 FP4 E2M1 codes per 16 bytes: code 2j in byte j's low
//                                     nibble, code 2j + 1 in its high nibble
//   <stack>_scales  U8 (E, R, G)      one E8M0 exponent byte s per 32 codes
// Row (e, r) decodes to K = 32·G values. transformers then swaps the last two dimensions, so
// the dequantized tensor is (E, K, R): the form a bf16 gpt-oss checkpoint stores, gate_up_proj
// (E, C, 2I) with gate and up in alternating columns and down_proj (E, I, C). A row of the
// blocks is therefore a column of that tensor, which is a row of sft's stack (E, 2I, C) /
// (E, C, I) (moe_checkpoint.h places it). Everything else (the experts' biases, router,
// attention, norms, embeddings) is stored plain, bf16. modules_to_not_convert (the released
// checkpoints list self_attn, mlp.router, embed_tokens, lm_head) only steers the quantized
// (triton) path; a dequantizing load converts whatever pairs the checkpoint holds, by name.
//
// Values: code c is ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}[c & 7], negative when bit 3 is set (code 8 is
// -0.0); the value is that times 2^(s − 127) (torch.ldexp: the exact product, rounded once to
// the parameter's dtype; no intermediate overflow, 0.5 · 2^128 is 2^127). Every finite result has
// two significant bits and an exponent ≥ −128, so it is exact in float32 and in bf16: a bf16
// and a float32 load hold the same values, and so do sft's float32 master weights. Products of
// 2^128 or more are inf (scale byte 255 with |value| ≥ 1, 254 with ≥ 2, 253 with ≥ 4), which
// transformers would load as is; sft refuses a block that decodes to inf (there is no NaN: the
// table is finite, and so is every factor before rounding).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>

#include "core/tensor.h"
#include "io/safetensors.h"

namespace sft::model {

inline constexpr int64_t kMxfp4BlockValues = 32;  // values per scale byte
inline constexpr int64_t kMxfp4BlockBytes = 16;   // bytes per block of values

// FP4 E2M1: the value of each 4-bit code (transformers' FP4_VALUES).
inline constexpr std::array<float, 16> kFp4E2M1Values = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,
                                                         4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
                                                         -2.0f, -3.0f, -4.0f, -6.0f};

// E8M0 scale byte s as the factor 2^(s − 127), in double so that no product overflows before
// its one rounding to float (2^128 is not a float).
inline double e8m0_scale(uint8_t s) {
  return std::ldexp(1.0, static_cast<int>(s) - 127);
}
// Code `code` (0..15) under scale byte `scale`, as transformers computes it.
inline float mxfp4_value(uint8_t code, uint8_t scale) {
  return static_cast<float>(kFp4E2M1Values[code & 15u] * e8m0_scale(scale));
}

// The pair's shapes for a stack of `experts` matrices of `rows` rows of `values` values each
// (a multiple of 32): blocks (E, R, values / 32, 16), scales (E, R, values / 32).
Shape mxfp4_blocks_shape(int64_t experts, int64_t rows, int64_t values);
Shape mxfp4_scales_shape(int64_t experts, int64_t rows, int64_t values);

// The tensors' names beside a stack's name ("…experts.gate_up_proj" → "…gate_up_proj_blocks").
std::string mxfp4_blocks_name(const std::string& stack);
std::string mxfp4_scales_name(const std::string& stack);

// One stored pair: its entries and where they are (for messages).
struct Mxfp4Pair {
  const TensorEntry& blocks;
  std::string blocks_file;
  const TensorEntry& scales;
  std::string scales_file;
};

// Checks a pair as stored, before any byte is decoded: both uint8, blocks of rank ≥ 2 ending in
// 16 bytes, scales of the blocks' shape without that last dimension. Throws naming the file and
// the tensor. (Agreement with config.json is the layout check's: checkpoint_layout lists the
// shapes the config implies.)
void check_mxfp4_pair(const Mxfp4Pair& pair);

// Decodes one row: `blocks` G·16 bytes and their G `scales` into `out`, G·32 values. Returns
// the index in `out` of the first value that is not finite, or -1.
int64_t decode_mxfp4_row(std::span<const uint8_t> blocks, std::span<const uint8_t> scales,
                         std::span<float> out);

}  // namespace sft::model
