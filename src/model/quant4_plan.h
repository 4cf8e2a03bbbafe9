// QLoRA's plan: which of a model's parameters are held in bitsandbytes' 4-bit format and how
// they are quantized, as transformers' load_in_4bit does it (Bnb4BitHfQuantizer): every
// nn.Linear weight of the decoder layers becomes a Params4bit (quantize_4bit, blocks of 64,
// nested statistics with bnb_4bit_use_double_quant); the embedding (an nn.Embedding), the LM
// head (the output embeddings, tied or not), norms and biases stay unquantized, and so do the
// modules llm_int8_skip_modules names. A weight is quantized from the dtype transformers loads
// it in (--dtype): bf16 weights are rounded to bf16 first.
//
// The plan comes from the flags (train/quant_args.h) or from a pre-quantized folder's
// config.json (its quantization_config, quant_method "bitsandbytes").
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/json.h"
#include "model/param_layout.h"
#include "ops/quant4.h"

namespace sft::model {

struct Quant4Plan {
  ops::Quant4Type type = ops::Quant4Type::kNf4;
  bool nested = false;                    // bnb_4bit_use_double_quant / --use_bnb_nested_quant
  int64_t blocksize = 64;                 // transformers' Params4bit default
  DType input_dtype = DType::kF32;        // weights are rounded to this before quantizing
  std::vector<std::string> skip_modules;  // llm_int8_skip_modules: module names kept unquantized
};

// Whether transformers would hold `spec` 4-bit under `plan`.
bool quantized_by_plan(const ParamSpec& spec, const Quant4Plan& plan);

// A packed 4-bit tensor as the matmul reads it: the packed indices and one f32 absmax per
// block (with nested statistics, the absmax after their 8-bit round trip, as bitsandbytes
// dequantizes them before every matmul).
struct Quant4Data {
  std::vector<uint8_t> packed;
  std::vector<float> absmax;
};

// Quantizes `values` (a weight, row-major) exactly as bitsandbytes.functional.quantize_4bit
// on the CPU, after rounding to plan.input_dtype.
Quant4Data quantize_for_plan(std::span<const float> values, const Quant4Plan& plan);

// The bitsandbytes 4-bit quantization_config of a config.json, if it has one: its plan
// (bnb_4bit_quant_type, bnb_4bit_use_double_quant, llm_int8_skip_modules). A quantization
// config of another method or in 8-bit is refused naming `where` with a hint, except gpt-oss's
// "mxfp4" (nullopt: its experts are dequantized at load, model/mxfp4.h).
std::optional<Quant4Plan> plan_from_model_config(const Json& config, const std::string& where);

}  // namespace sft::model
