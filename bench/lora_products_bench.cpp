// LoRA's rank-16 products at the Qwen3-1.7B shape (T 1024 tokens, r 16, bf16 operands, fp32
// accumulation). The backward's two products over the output gradient g (T, O), dB += gᵀ·u and
// du = g·B, as two ops::matmul calls (oneDNN) against the one-pass AMX kernel
// (ops/cpu/lora_backward_amx.h) that model/lora.cpp runs, for O = 1024 (k, v), 2048 (q, o, down)
// and 6144 (gate, up); then the other two skinny products at the input widths I = 2048 and 6144,
// dA += duᵀ·x and u = x·Aᵀ, through ops::matmul (what the step runs). The calls of one shape are
// timed in alternating rounds (the best round counts), so a shared machine's load hits them
// alike. Prints CPU and wall milliseconds a call (getrusage over all threads; steady_clock).
// Run: SFT_NUM_THREADS=1 build/bench/bench_lora_products [reps=20], and with 2 threads.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "ops/cpu/lora_backward_amx.h"
#include "ops/ops.h"
#include "process_clock.h"

namespace {

using sft::bench::process_cpu_seconds;
using sft::bench::wall_seconds;

std::vector<uint16_t> random_bf16(int64_t n, uint64_t seed) {
  sft::Rng rng(seed);
  std::vector<uint16_t> v(static_cast<size_t>(n));
  for (uint16_t& x : v) x = sft::f32_to_bf16(rng.normal());
  return v;
}

struct Timing {
  double cpu_ms = 1e30, wall_ms = 1e30;
};

// One round: reps calls of f; keeps the best round's per-call times.
void round_of(Timing& t, int reps, const std::function<void()>& f) {
  const double c0 = process_cpu_seconds(), w0 = wall_seconds();
  for (int i = 0; i < reps; ++i) f();
  t.cpu_ms = std::min(t.cpu_ms, 1e3 * (process_cpu_seconds() - c0) / reps);
  t.wall_ms = std::min(t.wall_ms, 1e3 * (wall_seconds() - w0) / reps);
}

void print(const char* name, const Timing& t) {
  std::printf("%-52s %8.3f ms CPU %8.3f ms wall a call\n", name, t.cpu_ms, t.wall_ms);
}

// The named calls timed in alternating rounds.
void compare(int reps, const std::vector<std::pair<const char*, std::function<void()>>>& calls) {
  std::vector<Timing> t(calls.size());
  for (const auto& [name, f] : calls) f();  // warm-up: oneDNN's kernel compiles, scratch sizing
  for (int round = 0; round < 5; ++round)
    for (size_t i = 0; i < calls.size(); ++i) round_of(t[i], reps, calls[i].second);
  for (size_t i = 0; i < calls.size(); ++i) print(calls[i].first, t[i]);
}

}  // namespace

int main(int argc, char** argv) {
  using sft::ops::view_of;
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int64_t T = 1024, r = 16;
  const bool amx = sft::ops::cpu::lora_backward_amx_serves();
  if (!amx) std::printf("(no AMX here: the one-pass kernel is not timed)\n");
  for (const int64_t O : {1024, 2048, 6144}) {
    const std::vector<uint16_t> g = random_bf16(T * O, 1), u = random_bf16(T * r, 2);
    const std::vector<uint16_t> b = random_bf16(O * r, 3);
    std::vector<float> db(static_cast<size_t>(O * r)), du(static_cast<size_t>(T * r));
    const auto gv = view_of(g.data(), T, O), uv = view_of(u.data(), T, r);
    const auto bv = view_of(b.data(), O, r);
    const auto dbv = view_of(db.data(), O, r), duv = view_of(du.data(), T, r);
    std::printf("O = %lld (g %lld x %lld bf16, %.1f MB)\n", static_cast<long long>(O),
                static_cast<long long>(T), static_cast<long long>(O), 2e-6 * T * O);
    std::vector<std::pair<const char*, std::function<void()>>> calls = {
        {"  dB += g^T u            (matmul)",
         [&] { sft::ops::matmul(dbv, gv, uv, true, false, true); }},
        {"  du  = g B              (matmul)",
         [&] { sft::ops::matmul(duv, gv, bv, false, false, false); }},
        {"  dB, du: two matmuls    (matmul)",
         [&] {
           sft::ops::matmul(dbv, gv, uv, true, false, true);
           sft::ops::matmul(duv, gv, bv, false, false, false);
         }},
    };
    if (amx)
      calls.push_back({"  dB, du: one pass over g (lora_backward_amx)", [&] {
                         sft::ops::cpu::lora_backward_amx(db.data(), r, du.data(), r, g.data(), O,
                                                          u.data(), r, b.data(), r, T, O, r);
                       }});
    compare(reps, calls);
  }
  // The forward's u = x·Aᵀ and the backward's dA += duᵀ·x at the two input widths.
  for (const int64_t I : {2048, 6144}) {
    const std::vector<uint16_t> x = random_bf16(T * I, 4), a = random_bf16(r * I, 5);
    const std::vector<uint16_t> du = random_bf16(T * r, 6);
    std::vector<float> u(static_cast<size_t>(T * r)), da(static_cast<size_t>(r * I));
    const auto xv = view_of(x.data(), T, I), av = view_of(a.data(), r, I);
    const auto duv = view_of(du.data(), T, r);
    std::printf("I = %lld\n", static_cast<long long>(I));
    std::vector<std::pair<const char*, std::function<void()>>> calls = {
        {"  u   = x A^T            (matmul)",
         [&] { sft::ops::matmul(view_of(u.data(), T, r), xv, av, false, true, false); }},
        {"  dA += du^T x           (matmul)",
         [&] { sft::ops::matmul(view_of(da.data(), r, I), duv, xv, true, false, true); }},
    };
    compare(reps, calls);
  }
  return 0;
}
