// LoRA's rank-16 products at the Qwen3-1.7B shape (T 1024 tokens, r 16, bf16 operands, fp32
// accumulation), each in the layouts the step can ask for: dB = gᵀ·u (M = out features, a
// transposed) against its transpose dBᵀ = uᵀ·g (M = r). Prints CPU milliseconds a call
// (getrusage, all threads).
// Run: SFT_NUM_THREADS=1 build/bench/bench_lora_products [reps=20]
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "ops/ops.h"
#include "process_clock.h"

namespace {

using sft::bench::process_cpu_seconds;

std::vector<uint16_t> random_bf16(int64_t n, uint64_t seed) {
  sft::Rng rng(seed);
  std::vector<uint16_t> v(static_cast<size_t>(n));
  for (uint16_t& x : v) x = sft::f32_to_bf16(rng.normal());
  return v;
}

void time_it(const char* name, int reps, const std::function<void()>& f) {
  f();
  const double c0 = process_cpu_seconds();
  for (int i = 0; i < reps; ++i) f();
  std::printf("%-44s %8.3f ms CPU a call\n", name, 1e3 * (process_cpu_seconds() - c0) / reps);
}

}  // namespace

int main(int argc, char** argv) {
  using sft::ops::view_of;
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int64_t T = 1024, r = 16;
  for (const int64_t O : {1024, 2048, 6144}) {
    const std::vector<uint16_t> g = random_bf16(T * O, 1), u = random_bf16(T * r, 2);
    std::vector<float> db(static_cast<size_t>(O * r)), dbt(static_cast<size_t>(r * O));
    const auto gv = view_of(g.data(), T, O), uv = view_of(u.data(), T, r);
    char name[96];
    std::snprintf(name, sizeof name, "dB  = g^T u   M=%lld N=16 K=1024 ta",
                  static_cast<long long>(O));
    time_it(name, reps,
            [&] { sft::ops::matmul(view_of(db.data(), O, r), gv, uv, true, false, true); });
    std::snprintf(name, sizeof name, "dBt = u^T g   M=16 N=%lld K=1024 ta",
                  static_cast<long long>(O));
    time_it(name, reps,
            [&] { sft::ops::matmul(view_of(dbt.data(), r, O), uv, gv, true, false, true); });
  }
  return 0;
}
