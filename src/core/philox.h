// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), the
// counter-based generator behind core/rng.h, as plain functions that host code and CUDA kernels
// both compile: a kernel that draws word p of a stream gets the bits the host's Rng would, so a
// device run adds the CPU's noise (NEFTune) without carrying a host buffer over.
//
// Stream layout (core/rng.h's): word p of stream (seed, stream) is word p % 4 of the block
// philox4x32_10(counter = (p / 4 low, p / 4 high, stream low, stream high), key = seed's halves).
// No std:: types here: nvcc would need --expt-relaxed-constexpr to call std::array on the device.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SFT_HOST_DEVICE __host__ __device__
#else
#define SFT_HOST_DEVICE
#endif

namespace sft::philox {

struct Block {
  uint32_t word[4];
};

inline constexpr uint32_t kMul0 = 0xD2511F53u;
inline constexpr uint32_t kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // the golden ratio
inline constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

// The raw bijection: ten rounds of two 32 × 32 → 64-bit products, the key bumped by the Weyl
// constants between rounds.
SFT_HOST_DEVICE inline Block bijection(Block c, uint32_t key0, uint32_t key1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c.word[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c.word[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c = Block{{hi1 ^ c.word[1] ^ key0, lo1, hi0 ^ c.word[3] ^ key1, lo0}};
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return c;
}

// Word `position` of stream (seed, stream).
SFT_HOST_DEVICE inline uint32_t word(uint64_t seed, uint64_t stream, uint64_t position) {
  const uint64_t block = position >> 2;
  const Block out =
      bijection(Block{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                       static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)}},
                static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return out.word[position & 3];
}

// A word as a uniform float in [0, 1): its top 24 bits, so every value is exact in f32.
SFT_HOST_DEVICE inline float uniform(uint32_t w) {
  return static_cast<float>(w >> 8) * 0x1p-24f;
}

}  // namespace sft::philox
