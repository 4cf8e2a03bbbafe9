// The quant_state of a bitsandbytes 4-bit weight: the JSON object transformers stores, as
// uint8 bytes, in "<name>.weight.quant_state.bitsandbytes__<nf4|fp4>" (quant_type, blocksize,
// dtype, shape; nested_blocksize, nested_dtype and nested_offset with nested statistics).
// model/quant4_weight.h reads the rest of the weight.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ops/cpu/bnb_quant.h"

namespace sft::model {

struct Quant4State {
  ops::cpu::Quant4Type type = ops::cpu::Quant4Type::kNf4;
  int64_t blocksize = 64;
  std::string dtype;           // the weight's dtype before quantization: "bfloat16", ...
  std::vector<int64_t> shape;  // the weight's shape, [out, in]
  bool nested = false;
  int64_t nested_blocksize = 0;
  float nested_offset = 0;
};

// Parses and validates the JSON (the fuzzing surface). Throws "[quant] <where>: ..." with a
// hint; `where` names the file and the tensor.
Quant4State parse_quant4_state(std::string_view json, const std::string& where);

// The refusal every 4-bit reading error ends in: "[quant] <where>: <what> (hint: ...)".
[[noreturn]] void refuse_quant4(const std::string& where, const std::string& what);

}  // namespace sft::model
