// Which instruction sets this CPU offers our own kernels, decided once per process.
// SFT_CPU_ISA=generic forces the baseline (SSE2) paths, so tests can keep them correct on
// machines that would never take them (oneDNN has its own switch, ONEDNN_MAX_CPU_ISA).
#pragma once

namespace sft::ops::cpu {

// AVX-512 F/DQ/BW/VL present and not disabled by SFT_CPU_ISA=generic.
bool use_avx512();

}  // namespace sft::ops::cpu
