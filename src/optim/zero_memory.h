// Zeroing parts of a host arena that a rank does not own under ZeRO-2/3, and handing the
// pages back to the OS while doing so: the whole pages inside the range are released with
// madvise(MADV_DONTNEED) (private anonymous memory reads back as zeros and costs no resident
// memory until written again), the partial pages at its ends are cleared with memset. So a
// full-size arena whose non-own parts stay zero between uses occupies only the pages in use:
// that is where ZeRO-2's gradient and ZeRO-3's parameter savings come from, without a second
// layout for the arenas. Host memory only.
#pragma once

#include <cstddef>
#include <vector>

#include "parallel/comm.h"

namespace sft {

void zero_and_release(void* data, size_t bytes);

// The runs of [0, n) outside `layers` (the parameters no decoder layer holds: embedding, final
// norm, LM head), in order; empty runs of `layers` are ignored. Throws "[optim] <who>: ..." when
// the layers' runs overlap or pass n.
std::vector<ShardRange> runs_outside_layers(std::vector<ShardRange> layers, size_t n,
                                            const char* who);

}  // namespace sft
