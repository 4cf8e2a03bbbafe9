// How much of a range of host memory is resident (in RAM) now, from the kernel's page tables
// (mincore): the measure of what core/page_release.h hands back. A page counts whole when any
// byte of the range lies in it. It lets a run report, and a test check, the memory its arenas
// really occupy, independent of the rest of the process (unlike VmRSS). Host memory only.
#pragma once

#include <cstddef>

namespace sft {

// Resident bytes of the pages that [data, data + bytes) touches (0 for an empty range). Throws
// "[core] ..." when the kernel refuses (not a mapped range).
size_t resident_bytes(const void* data, size_t bytes);

}  // namespace sft
