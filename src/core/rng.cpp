#include "core/rng.h"

#include <cmath>

#include "core/philox.h"

namespace sft {

PhiloxBlock philox4x32_10(PhiloxBlock ctr, PhiloxKey key) {
  const philox::Block out =
      philox::bijection(philox::Block{{ctr[0], ctr[1], ctr[2], ctr[3]}}, key[0], key[1]);
  return {out.word[0], out.word[1], out.word[2], out.word[3]};
}

Rng::Rng(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}

uint32_t Rng::next_u32() {
  return philox::word(seed_, stream_, position_++);
}

uint64_t Rng::next_u64() {
  uint64_t hi = next_u32();
  return (hi << 32) | next_u32();
}

float Rng::uniform() {
  return philox::uniform(next_u32());
}

uint64_t Rng::below(uint64_t bound) {
  // Lemire's rejection: unbiased, and rarely loops.
  uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    uint64_t x = next_u64();
    __uint128_t m = static_cast<__uint128_t>(x) * bound;
    if (static_cast<uint64_t>(m) >= threshold) return static_cast<uint64_t>(m >> 64);
  }
}

float Rng::normal() {
  // 1 - uniform() is in (0, 1], so the log is finite.
  float u1 = 1.0f - uniform();
  float u2 = uniform();
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853071795864f * u2);
}

}  // namespace sft
