// Which OpenBLAS kernel set this process got, and the fix when it is the wrong one.
//
// OpenBLAS picks its kernels (its "core") once, when the library is loaded, from the CPU it
// recognises or from OPENBLAS_CORETYPE. Debian 12's 0.3.21 does not recognise recent Xeons
// and falls back to its SSE3 "Prescott" kernels, several times slower at sgemm. Since the
// choice is made before main() runs, the only remedy from inside the process is to set
// OPENBLAS_CORETYPE and execute the program again.
#pragma once

#include <string>

namespace sft::ops {

// The kernel set OpenBLAS is using ("Haswell", "Prescott", ...).
std::string blas_kernel_name();

// The OPENBLAS_CORETYPE that would give this CPU fast kernels when OpenBLAS fell back to a
// generic set and the user did not choose one; nullptr when nothing needs to change.
const char* better_blas_coretype();

}  // namespace sft::ops
