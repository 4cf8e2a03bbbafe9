#include "core/rng.h"

#include <cmath>

namespace sft {

namespace {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t product = uint64_t{a} * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

}  // namespace

PhiloxBlock philox4x32_10(PhiloxBlock ctr, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, ctr[0], hi0, lo0);
    mulhilo(kMul1, ctr[2], hi1, lo1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return ctr;
}

Rng::Rng(uint64_t seed, uint64_t stream)
    : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}, stream_(stream) {}

uint32_t Rng::next_u32() {
  // Counter = (block index, stream); each block yields four words.
  uint64_t block = position_ >> 2;
  PhiloxBlock out =
      philox4x32_10({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                     static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)},
                    key_);
  return out[position_++ & 3];
}

uint64_t Rng::next_u64() {
  uint64_t hi = next_u32();
  return (hi << 32) | next_u32();
}

float Rng::uniform() {
  return static_cast<float>(next_u32() >> 8) * 0x1p-24f;
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
