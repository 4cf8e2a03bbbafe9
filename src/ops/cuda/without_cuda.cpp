// Built when SFT_CUDA is OFF: the CUDA entry points exist and say how to get them.
#include "core/error.h"
#include "ops/backend.h"

namespace sft {

bool cuda_available() {
  return false;
}

void cuda_init(int /*device*/) {
  fail("cuda", "sft was built without CUDA; rebuild with -DSFT_CUDA=ON");
}

std::string compiled_backends() {
  return "cpu";
}

}  // namespace sft
