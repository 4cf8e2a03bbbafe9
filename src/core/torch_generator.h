// torch's CPU random generator and torch.randperm on CPU, reproduced bit for bit, so that sft
// visits training rows in the order TRL / transformers / accelerate do for the same seed.
//
// torch.Generator().manual_seed(seed) on CPU (at::CPUGeneratorImpl) is a 32-bit Mersenne
// Twister (MT19937) initialised from the low 32 bits of the seed with the reference
// init_genrand recurrence; that is exactly std::mt19937(uint32_t(seed)), checked against
// goldens from torch 2.15 (tests/fixtures/sampler/generator.json). random() is one 32-bit
// draw; random64() is two, the first giving the high word.
//
// torch.randperm(n, generator=g) on CPU has two paths (ATen's randperm_cpu):
//   n <  kTorchRandpermInsideOutFrom: start from 0..n-1 and for i = 0 .. n-2 swap r[i] with
//        r[i + random() % (n - i)] (n - 1 draws of 32 bits);
//   n >= kTorchRandpermInsideOutFrom: the "inside-out" Fisher-Yates, for i = 0 .. n-1:
//        z = random64() % (i + 1); r[i] = r[z]; r[z] = i (n draws of 64 bits).
// This file only reproduces that stream; sft's own randomness stays in core/rng.h.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace sft {

// From this n on, torch.randperm takes the 64-bit inside-out path: (2^32 - 1) / 20.
inline constexpr uint64_t kTorchRandpermInsideOutFrom = 0xffffffffull / 20;

class TorchGenerator {
 public:
  // torch.Generator().manual_seed(seed); only the low 32 bits matter (a negative Python seed
  // is taken modulo 2^64 by torch, which uint64_t arithmetic does too).
  explicit TorchGenerator(uint64_t seed) { manual_seed(seed); }
  void manual_seed(uint64_t seed) { engine_.seed(static_cast<uint32_t>(seed & 0xffffffffu)); }

  uint32_t random() { return static_cast<uint32_t>(engine_()); }
  uint64_t random64() {
    const uint64_t hi = random();
    const uint64_t lo = random();
    return (hi << 32) | lo;
  }

 private:
  std::mt19937 engine_;
};

// torch.randperm(n, generator=gen) on CPU (int64 result), advancing gen as torch does.
std::vector<uint64_t> torch_randperm(uint64_t n, TorchGenerator& gen);

}  // namespace sft
