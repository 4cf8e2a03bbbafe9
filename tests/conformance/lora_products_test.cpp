// Conformance of ops::lora_backward_products on views: db += gᵀ · u and du = g · b, f32 and
// bf16 (fp32 accumulation), against the f64 CPU products of the same values. On an AMX CPU the
// bf16 case is the one-pass tile kernel (cpu/lora_backward_amx.h), elsewhere two matmuls.
//
// Tolerances (max |err| / max |ref|): 1e-5 for both dtypes (the operands are exact on their grid
// and their products exact in fp32; only the fp32 sums round, over N ≤ 301 or O ≤ 1030).
#include <gtest/gtest.h>

#include <string>

#include "conformance.h"

namespace sft::conformance {
namespace {

struct LoraCase {
  int64_t N, O, r;
  std::string name() const {
    return "N " + std::to_string(N) + ", O " + std::to_string(O) + ", r " + std::to_string(r);
  }
};

// db starts non-zero (it accumulates), du as NaN (it is overwritten).
Outputs run_lora_products(const LoraCase& c, const Backend& be, Mode m) {
  const DType out = m.dtype == DType::kBF16 ? DType::kF32 : m.dtype;
  const size_t nr = static_cast<size_t>(c.N * c.r), orr = static_cast<size_t>(c.O * c.r);
  Buffer G(be, m.dtype, c.N, c.O, random_values(static_cast<size_t>(c.N * c.O), 1, 1.0, m.grid));
  Buffer U(be, m.dtype, c.N, c.r, random_values(nr, 2, 1.0, m.grid));
  Buffer B(be, m.dtype, c.O, c.r, random_values(orr, 3, 1.0, m.grid));
  Buffer DB(be, out, c.O, c.r, random_values(orr, 4, 1.0, DType::kF32));
  Buffer DU(be, out, c.N, c.r, Values(nr, kNaN));
  ops::lora_backward_products(DB.view(), DU.view(), G.view(), U.view(), B.view());
  return {{"db", DB.read()}, {"du", DU.read()}};
}

SFT_CONFORMANCE_SUITE(ConformanceLoraProducts);

TEST_P(ConformanceLoraProducts, OddShapesAndRanks) {
  const LoraCase cases[] = {{1, 1, 1},     {17, 33, 8},     {33, 300, 16},
                            {64, 257, 13}, {301, 1030, 16}, {37, 64, 40}};
  for (const LoraCase& c : cases)
    check_conformance(
        backend(), "lora_backward_products " + c.name(),
        [&](const Backend& be, Mode m) { return run_lora_products(c, be, m); },
        {DType::kF32, DType::kBF16}, uniform_tolerance(1e-5, 1e-5));
}

}  // namespace
}  // namespace sft::conformance
