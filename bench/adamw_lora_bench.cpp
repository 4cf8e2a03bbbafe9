// AdamW over the LoRA adapters of the Qwen3-1.7B shape (r 16 on all seven linear layers of 28
// blocks: 392 tensors, ~17M parameters), as the QLoRA step calls it: one AdamW::step over the
// adapters' slices with the bf16 compute copies written in the same pass. Prints wall and
// process CPU seconds (getrusage, all threads) per step. With "per_tensor", one
// ops::adamw_update per tensor instead (what AdamW::step did before adamw_update_slices): the A/B.
// Run: SFT_NUM_THREADS=2 build/bench/bench_adamw_lora [steps=20] [per_tensor]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/rng.h"
#include "core/thread_pool.h"
#include "ops/ops.h"
#include "optim/adamw.h"
#include "process_clock.h"

namespace {

using sft::bench::process_cpu_seconds;
using sft::bench::wall_seconds;

// Each block's (in, out) features of q, k, v, o, gate, up, down; LoRA's A is (r, in), B (out, r).
std::vector<sft::ParamSlice> qwen3_1_7b_lora_slices(size_t r) {
  const size_t h = 2048, kv = 1024, inter = 6144;
  const size_t shapes[7][2] = {{h, h},     {h, kv},    {h, kv},   {h, h},
                               {h, inter}, {h, inter}, {inter, h}};
  std::vector<sft::ParamSlice> slices;
  size_t offset = 0;
  for (int layer = 0; layer < 28; ++layer)
    for (const auto& s : shapes)
      for (size_t n : {r * s[0], s[1] * r}) {
        slices.push_back({offset, n, true});
        offset += n;
      }
  return slices;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  const size_t threads = sft::default_thread_pool().size();
  const std::vector<sft::ParamSlice> slices = qwen3_1_7b_lora_slices(16);
  const size_t n = slices.back().offset + slices.back().size;
  std::vector<float> params(n), grads(n);
  std::vector<uint16_t> copies(n);
  sft::Rng rng(7);
  for (size_t i = 0; i < n; ++i) {
    params[i] = 0.02f * rng.normal();
    grads[i] = 1e-3f * rng.normal();
  }
  const bool per_tensor = argc > 2 && std::strcmp(argv[2], "per_tensor") == 0;
  sft::AdamW adamw(n, sft::AdamWOptions{});
  // The per-tensor path updates the optimizer's own moments (fresh calloc pages, as AdamW's).
  float* m = adamw.exp_avg().mutable_values<float>().data();
  float* v = adamw.exp_avg_sq().mutable_values<float>().data();
  auto step = [&] {
    if (!per_tensor) return adamw.step(params, grads, slices, 1e-4, copies.data());
    const sft::ops::AdamWScalars k{-1e-4f, 1.0f, 1e-8f, 0.1f, 0.999f, 0.001f, 0.99f, true};
    for (const sft::ParamSlice& s : slices) {
      const auto len = static_cast<int64_t>(s.size);
      auto view = [&](auto* base) { return sft::ops::view_of(base + s.offset, 1, len); };
      sft::ops::adamw_update(view(params.data()), view(grads.data()), view(m), view(v), k,
                             view(copies.data()));
    }
  };
  // The first step writes the moments' pages for the first time (calloc maps them lazily).
  const double f0 = process_cpu_seconds(), fw0 = wall_seconds();
  step();
  std::printf("first step: %.2f ms wall, %.2f ms CPU\n", 1e3 * (wall_seconds() - fw0),
              1e3 * (process_cpu_seconds() - f0));
  const double c0 = process_cpu_seconds(), w0 = wall_seconds();
  for (int s = 0; s < steps; ++s) step();
  const double cpu = (process_cpu_seconds() - c0) / steps, wall = (wall_seconds() - w0) / steps;
  std::printf(
      "AdamW over %zu LoRA tensors, %zu parameters, %zu thread(s)%s: %.2f ms wall, %.2f ms CPU "
      "a step (%.1f GB/s of wall)\n",
      slices.size(), n, threads, per_tensor ? ", per tensor" : "", 1e3 * wall, 1e3 * cpu,
      n * 22.0 / wall / 1e9);
  return 0;
}
