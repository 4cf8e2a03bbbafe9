// Fused LM head + cross-entropy: statistics of one call.
#pragma once

#include <cstdint>

namespace sft::ops {

struct LmHeadStats {
  double loss_sum = 0;
  int64_t count = 0;
  int64_t correct = 0;
  double entropy_sum = 0;
};

}  // namespace sft::ops
