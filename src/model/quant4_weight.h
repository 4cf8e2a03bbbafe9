// A bitsandbytes 4-bit weight as transformers' save_pretrained writes a load_in_4bit model.
// For a Linear's "<name>.weight" the checkpoint holds
//   <name>.weight                      the packed indices, two per byte (uint8, or the bytes of
//                                      bnb_4bit_quant_storage's dtype), shape [ceil(n / 2), 1]
//   <name>.weight.absmax               f32 per block of `blocksize`; uint8 codes when nested
//   <name>.weight.quant_map            f32 [16], the NF4 or FP4 table
//   <name>.weight.nested_absmax        f32 per block of `nested_blocksize` (nested only)
//   <name>.weight.nested_quant_map     f32 [256], the 8-bit map (nested only)
//   <name>.weight.quant_state.bitsandbytes__<nf4|fp4>
//                                      uint8, the bytes of a JSON object: quant_type, blocksize,
//                                      dtype, shape, and nested_blocksize / nested_dtype /
//                                      nested_offset when nested
// read_quant4_weight checks each piece against the others (sizes, dtypes, the table) and
// fails naming the file, the tensor and what disagrees, before anything uses the weight.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/quant4_state.h"

namespace sft::model {

struct Quant4Weight {
  Quant4State state;
  std::vector<uint8_t> packed;  // ceil(numel / 2) bytes
  std::vector<float> absmax;    // one per block, f32 (nested statistics already undone)

  int64_t numel() const;
  // The weight in f32, [out, in] row-major, as bitsandbytes dequantizes it.
  std::vector<float> dequantize() const;
};

// Whether the file holds `weight_name` ("model.layers.0.mlp.up_proj.weight") in 4-bit form.
bool is_quant4_weight(const SafetensorsFile& file, const std::string& weight_name);
// The quant_state alone (its shape is the weight's), checked as read_quant4_weight checks it.
Quant4State read_quant4_state(const SafetensorsFile& file, const std::string& weight_name);
// Whether `name` is one of the tensors a 4-bit weight stores beside its packed bytes
// ("...weight.absmax", "...weight.quant_state.bitsandbytes__nf4", ...).
bool is_quant4_piece(const std::string& name);
Quant4Weight read_quant4_weight(const SafetensorsFile& file, const std::string& weight_name);

}  // namespace sft::model
