// Counter-based deterministic random numbers (Philox4x32-10, Salmon et al. 2011; the
// bijection itself is core/philox.h, which CUDA kernels share).
//
// A stream is a pure function of (seed, stream id, position): any element can be
// produced without producing the ones before it, so results do not depend on thread
// count or scheduling, and a resumed run continues the exact sequence. Every use of
// randomness in sft (init, dropout, sampling) goes through this file; the training-row order
// follows TRL's instead (torch's generator, core/torch_generator.h).
#pragma once

#include <array>
#include <cstdint>

namespace sft {

using PhiloxBlock = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// The raw Philox4x32 bijection with 10 rounds.
PhiloxBlock philox4x32_10(PhiloxBlock counter, PhiloxKey key);

class Rng {
 public:
  // `stream` separates independent uses of one seed (e.g. data shuffle vs init).
  explicit Rng(uint64_t seed, uint64_t stream = 0);

  uint32_t next_u32();
  uint64_t next_u64();
  // Uniform in [0, 1) with 24 random bits (every value exactly representable).
  float uniform();
  // Uniform integer in [0, bound) without modulo bias; bound > 0.
  uint64_t below(uint64_t bound);
  // Standard normal via Box-Muller (consumes two uniforms per call).
  float normal();

  // Position in the stream, in 32-bit words; set_position jumps anywhere in O(1).
  uint64_t position() const { return position_; }
  void set_position(uint64_t position) { position_ = position; }

 private:
  uint64_t seed_;
  uint64_t stream_;
  uint64_t position_ = 0;
};

}  // namespace sft
