// FrozenBaseForm: which unquantized matrices of a frozen base (LoRA's, QLoRA's) are held in bf16
// only under bf16 compute, following what TRL 1.16 + transformers 5.24 hold and compute with.
//
// The reference. `trl sft` loads the model with from_pretrained(dtype = --dtype), float32 unless
// asked (TRL's ModelConfig.dtype and create_model_from_path), and with --load_in_4bit a
// BitsAndBytesConfig whose bnb_4bit_compute_dtype is that same dtype (get_quantization_config).
// transformers' Bnb4BitHfQuantizer swaps only the decoder layers' nn.Linear modules for
// Linear4bit; the embedding, the LM head and the norms stay ordinary parameters in the load
// dtype, and SFTTrainer 1.16 calls no prepare_model_for_kbit_training, so nothing upcasts them
// (only the adapters are cast, to bf16). TRL's --bf16 is autocast on the CPU: nn.Linear (the LM
// head, any unquantized projection) multiplies bf16(W); nn.Embedding is not autocast and returns
// its table's own values.
//
// So under bf16 compute:
//   - a frozen matmul weight (the untied LM head, a projection left unquantized) is only ever read
//     as bf16(W): held in bf16 only;
//   - the embedding table is held in bf16 only when the reference loaded it in bf16 (--dtype
//     bfloat16, or auto on a bf16 checkpoint), its lookups being bf16 values there; under float32
//     (TRL's default, and the QLoRA goldens' setting) it keeps fp32 and its lookups give fp32
//     values, as before. A tied table is the head too: in fp32 it also has a bf16 copy;
//   - a module that modules_to_save names keeps fp32 until LoRA has copied it (PEFT trains a copy
//     of the loaded module); its base is released afterwards like the rest.
// Norms (vectors) always keep fp32: they are small, and the residual stream is fp32.
//
// Loading a QLoRA base with a form (Transformer::load_4bit / random_4bit) reads or draws the
// matrices held in bf16 a block of rows at a time straight into bf16, so no fp32 copy of a
// (vocabulary × hidden) matrix ever exists; Transformer::keep_frozen_base_in_bf16 releases what
// is left in fp32 (modules_to_save bases, a plain LoRA base) once LoRA is set up.
#pragma once

#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/param_layout.h"

namespace sft::model {

struct FrozenBaseForm {
  bool bf16_compute = false;                 // TRL's --bf16
  bool embedding_bf16 = false;               // the reference holds the table in bf16
  std::vector<std::string> modules_to_save;  // PEFT's names: kept fp32 until copied

  // Under bf16 compute, with the weights loaded (by the reference) in `load_dtype`.
  static FrozenBaseForm bf16(DType load_dtype, std::vector<std::string> modules_to_save = {});

  // Held in bf16 only from the load on.
  bool held_in_bf16(const ParamSpec& spec) const;
  // Keeps its fp32 values once LoRA is set up (keep_frozen_base_in_bf16): a norm, a bias, or
  // the embedding looked up in fp32.
  bool keeps_fp32(const ParamSpec& spec) const;
};

}  // namespace sft::model
