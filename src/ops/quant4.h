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

// A rank-r term that ops::matmul_4bit sums with its product as r more steps of K:
// c = a · op(W) + a2 · op(b2) = [a | a2] · op([W | b2]), so that LoRA's adapter product
// (model/linear.cpp) lands in the output while the base product writes it, instead of a
// second pass over the whole output. a2 (M, r) in a's dtype; b2 laid out as op() reads W:
// (N, r) with trans_w, (r, N) without. Empty views: no term.
struct LowRankTerm {
  View a;
  View b;
  bool empty() const { return a.empty(); }
};

}  // namespace sft::ops
