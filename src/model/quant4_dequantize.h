// The fp32 model a QLoRA model computes with: every 4-bit weight dequantized as bitsandbytes
// dequantizes it (code × absmax of its block, in f32), every other tensor copied. What
// `sft merge` folds a QLoRA adapter into (PEFT's merge on a 4-bit base dequantizes the same way
// before adding B A · scale), so the merged model is what training computed with.
#pragma once

#include "model/transformer.h"

namespace sft::model {

// `m` must not have LoRA enabled and must keep its non-4-bit values in fp32.
Transformer dequantized_model(const Transformer& m);

}  // namespace sft::model
