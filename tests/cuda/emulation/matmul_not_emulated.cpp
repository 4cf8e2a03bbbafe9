// The emulated run has no cuBLASLt: matmul says so (its tests are left out of the run).
#include "core/error.h"
#include "ops/cuda/cuda_ops.h"

namespace sft::ops::cuda {

void matmul(View, View, View, bool, bool, bool) {
  fail("cuda", "matmul is not emulated (it is cuBLASLt's; scripts/device_check.sh runs it)");
}

}  // namespace sft::ops::cuda
