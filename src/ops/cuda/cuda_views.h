// The CUDA kernels' view checks, with the CPU dispatcher's messages ("[ops] <op>: ..."): every
// view given is on the device, the dtypes are those the kernel takes, the shapes fit.
#pragma once

#include <initializer_list>
#include <string>

#include "core/error.h"
#include "ops/view.h"

namespace sft::ops::cuda {

// Every non-empty view is a CUDA view.
void require_cuda(const char* op, std::initializer_list<View> views);
// Every view given has this dtype.
void require_dtype(const char* op, DType dtype, std::initializer_list<View> views);
// "(rows, cols)" for messages.
std::string shape(const View& v);

// `what` builds the message only on failure (these checks run on every call).
template <typename What>
void require(bool ok, const char* op, What&& what) {
  if (!ok) fail("ops", std::string(op) + ": " + what());
}

// Blocks for n items at `threads` per block; callers return before launching when n is 0.
inline unsigned blocks_for(int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace sft::ops::cuda
