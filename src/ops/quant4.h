// A weight in bitsandbytes' 4-bit format, as the ops see it (ops::matmul_4bit; the format
// itself is ops/cpu/bnb_quant.h): W (rows × cols) row-major and flattened, two indices a byte
// in `packed` (u8, ceil(rows · cols / 2) bytes, the even element in the high nibble), one f32
// absmax per `blocksize` consecutive elements in `absmax`; both views dense.
#pragma once

#include <cstdint>

#include "ops/view.h"

namespace sft::ops {

enum class Quant4Type { kNf4, kFp4 };

struct Weight4Bit {
  View packed;
  View absmax;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t blocksize = 64;
  Quant4Type type = Quant4Type::kNf4;
};

}  // namespace sft::ops
