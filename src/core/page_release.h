// Zeroing a range of host memory and handing its pages back to the OS while doing so: the whole
// pages inside the range are released with madvise(MADV_DONTNEED) (private anonymous memory reads
// back as zeros and costs no resident memory until written again), the partial pages at its ends
// are cleared with memset. So a full-size arena whose unused parts stay zero occupies only the
// pages in use, without a second, smaller arena beside it: ZeRO-2/3's non-own shards
// (optim/zero_memory.h) and a frozen bf16 base's released fp32 matrices (model/parameters.h).
// Host memory only.
#pragma once

#include <cstddef>

namespace sft {

void zero_and_release(void* data, size_t bytes);

}  // namespace sft
