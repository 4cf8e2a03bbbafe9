// torch.randperm's two CPU paths; see the contract in torch_generator.h.
#include "core/torch_generator.h"

namespace sft {

namespace {

// The path torch keeps for small n: a forward Fisher-Yates whose draw for position i is
// reduced modulo the n - i positions left (torch accepts the modulo bias here).
void randperm_small(std::vector<uint64_t>& r, TorchGenerator& gen) {
  const uint64_t n = r.size();
  for (uint64_t i = 0; i < n; ++i) r[i] = i;
  for (uint64_t i = 0; i + 1 < n; ++i) {
    const uint64_t z = gen.random() % (n - i);
    std::swap(r[i], r[i + z]);
  }
}

// The path for n large enough that a 32-bit draw would be visibly biased: the inside-out
// variant, which writes each position once it is reached instead of initialising first.
void randperm_inside_out(std::vector<uint64_t>& r, TorchGenerator& gen) {
  const uint64_t n = r.size();
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t z = gen.random64() % (i + 1);
    r[i] = r[z];  // z == i reads the slot about to be written; the next line fixes it up
    r[z] = i;
  }
}

}  // namespace

std::vector<uint64_t> torch_randperm(uint64_t n, TorchGenerator& gen) {
  std::vector<uint64_t> r(n);
  if (n < kTorchRandpermInsideOutFrom)
    randperm_small(r, gen);
  else
    randperm_inside_out(r, gen);
  return r;
}

}  // namespace sft
