// The memory side of ZeRO-2/3: the parts of a host arena a rank does not own are zeroed with
// their pages handed back to the OS (zero_and_release, core/page_release.h), so a full-size arena
// whose non-own parts stay zero between uses occupies only the pages in use: that is where
// ZeRO-2's gradient and ZeRO-3's parameter savings come from, without a second layout for the
// arenas. Host memory only.
#pragma once

#include <cstddef>
#include <vector>

#include "core/page_release.h"
#include "parallel/comm.h"

namespace sft {

// The runs of [0, n) outside `layers` (the parameters no decoder layer holds: embedding, final
// norm, LM head), in order; empty runs of `layers` are ignored. Throws "[optim] <who>: ..." when
// the layers' runs overlap or pass n.
std::vector<ShardRange> runs_outside_layers(std::vector<ShardRange> layers, size_t n,
                                            const char* who);

}  // namespace sft
