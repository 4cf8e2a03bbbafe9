// Fused LM head + cross-entropy (ops::lm_head_cross_entropy) against today's chunked forward +
// recomputing backward (cpu::lm_head_loss_forward + _backward), on the benchmark shapes:
// T = 1024 scored tokens, V = 151936 (Qwen), C = 512 (103M) and 1024 (0.6B).
// GFLOP/s counts the useful work, 6·T·C·V (logits, dx, dw), for every variant, so today's extra
// logits recomputation shows as a lower rate. The fused benchmark sweeps the chunk height m and
// the vocabulary block of the gradient products (0 = whole rows), which is how the defaults in
// ops/cpu/lm_head_ce.cpp were chosen.
//
// Run: build/bench/bench_lm_head --benchmark_filter='Fused/C:512'   (each call takes seconds)
// On a shared machine, SFT_NUM_THREADS=1 and the CPU column measure the kernel rather than the
// neighbours (wall time then depends on who else is running).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/half.h"
#include "ops/cpu/lm_head_reference.h"
#include "ops/lm_head_ce.h"

namespace {

constexpr int64_t kTokens = 1024;
constexpr int64_t kVocab = 151936;

// Cheap deterministic values in about [-1, 1) (a full normal fill of 155M weights is slower
// than the kernel under test).
std::vector<float> fill(int64_t n, uint32_t seed, float amplitude) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed;
  for (float& a : v) {
    s = s * 1664525u + 1013904223u;
    a = amplitude * (static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
  return v;
}

struct Inputs {
  std::vector<float> x, w;
  std::vector<uint16_t> xb, wb;
  std::vector<int64_t> y;
};

// One set per hidden size, shared by every benchmark of that size.
const Inputs& inputs(int64_t C) {
  static std::map<int64_t, Inputs> cache;
  auto it = cache.find(C);
  if (it != cache.end()) return it->second;
  Inputs in;
  in.x = fill(kTokens * C, 1, 1.0f);
  in.w = fill(kVocab * C, 2, 0.05f);
  std::vector<float> yv = fill(kTokens, 3, 1.0f);
  for (float f : yv) in.y.push_back(static_cast<int64_t>((f + 1.0f) * 0.5f * (kVocab - 1)));
  return cache.emplace(C, std::move(in)).first->second;
}

const Inputs& bf16_inputs(int64_t C) {
  Inputs& in = const_cast<Inputs&>(inputs(C));
  if (in.wb.empty()) {
    for (float f : in.x) in.xb.push_back(sft::f32_to_bf16(f));
    for (float f : in.w) in.wb.push_back(sft::f32_to_bf16(f));
  }
  return in;
}

// products: 6 with dW (logits, dX, dW), 4 for a frozen head (no dW).
void report(benchmark::State& state, int64_t C, double products = 6.0) {
  const double flops = products * kTokens * static_cast<double>(C) * kVocab;
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// Args: C, rows per chunk m, vocabulary block (0 = whole rows).
void BM_Fused(benchmark::State& state) {
  const int64_t C = state.range(0);
  const Inputs& in = inputs(C);
  sft::ops::LmHeadWorkspace ws;
  ws.tuning.rows_per_chunk = state.range(1);
  ws.tuning.vocab_block = state.range(2);
  sft::ops::WorkspaceArena arena;
  ws.memory = arena.get(
      sft::ops::lm_head_kernel_workspace_bytes<float>(kTokens, C, kVocab, false, ws.tuning));
  std::vector<float> dx(static_cast<size_t>(kTokens * C)), dw(static_cast<size_t>(kVocab * C));
  const float scale = 1.0f / kTokens;
  // Warm-up on the first m rows touches the workspace's pages (first-touch page faults
  // are not the kernel's cost) at m/T of a call's price.
  const int64_t warm = ws.tuning.rows_per_chunk > 0 ? ws.tuning.rows_per_chunk : kTokens;
  sft::ops::lm_head_cross_entropy<float>(dx.data(), dw.data(), nullptr, in.x.data(), in.w.data(),
                                         in.y.data(), scale, warm, C, kVocab, ws);
  for (auto _ : state) {
    const sft::ops::LmHeadStats s = sft::ops::lm_head_cross_entropy<float>(
        dx.data(), dw.data(), nullptr, in.x.data(), in.w.data(), in.y.data(), scale, kTokens, C,
        kVocab, ws);
    benchmark::DoNotOptimize(s);
  }
  report(state, C);
}
BENCHMARK(BM_Fused)
    ->ArgNames({"C", "m", "vb"})
    ->ArgsProduct({{512, 1024}, {0}, {0}})
    ->ArgsProduct({{512, 1024}, {32, 64, 128, 256, 512}, {0, 8192}})
    ->ArgsProduct({{512, 1024}, {512, 1024}, {4096, 16384, 32768}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Today: forward (statistics) then backward (recomputes the logits), the same work as Fused.
void BM_Today(benchmark::State& state) {
  const int64_t C = state.range(0);
  const Inputs& in = inputs(C);
  std::vector<float> scratch, dx(static_cast<size_t>(kTokens * C)),
      dw(static_cast<size_t>(kVocab * C));
  const float scale = 1.0f / kTokens;
  sft::ops::cpu::lm_head_loss_forward<float>(nullptr, in.x.data(), in.w.data(), in.y.data(),
                                             kTokens, C, kVocab, scratch);
  for (auto _ : state) {
    const sft::ops::cpu::LossStats s = sft::ops::cpu::lm_head_loss_forward<float>(
        nullptr, in.x.data(), in.w.data(), in.y.data(), kTokens, C, kVocab, scratch);
    sft::ops::cpu::lm_head_loss_backward<float>(dx.data(), dw.data(), in.x.data(), in.w.data(),
                                                in.y.data(), scale, kTokens, C, kVocab, scratch);
    benchmark::DoNotOptimize(s);
  }
  report(state, C);
}
BENCHMARK(BM_Today)
    ->ArgName("C")
    ->Arg(512)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Not a timing: the fused float statistics against today's forward at the full shape (the unit
// test checks ≤1e-6 relative on a small vocabulary; here the sums run over 151936 logits).
void BM_StatsAgainstToday(benchmark::State& state) {
  const int64_t C = state.range(0);
  const Inputs& in = inputs(C);
  sft::ops::LmHeadWorkspace ws;
  sft::ops::WorkspaceArena arena;
  ws.memory = arena.get(sft::ops::lm_head_kernel_workspace_bytes<float>(kTokens, C, kVocab, false));
  std::vector<float> scratch, dx(static_cast<size_t>(kTokens * C)),
      dw(static_cast<size_t>(kVocab * C));
  sft::ops::LmHeadStats fused;
  sft::ops::cpu::LossStats today;
  for (auto _ : state) {
    fused = sft::ops::lm_head_cross_entropy<float>(dx.data(), dw.data(), nullptr, in.x.data(),
                                                   in.w.data(), in.y.data(), 1.0f / kTokens,
                                                   kTokens, C, kVocab, ws);
    today = sft::ops::cpu::lm_head_loss_forward<float>(nullptr, in.x.data(), in.w.data(),
                                                       in.y.data(), kTokens, C, kVocab, scratch);
  }
  state.counters["loss_rel_diff"] = std::fabs(fused.loss_sum - today.loss_sum) / today.loss_sum;
  state.counters["entropy_rel_diff"] =
      std::fabs(fused.entropy_sum - today.entropy_sum) / today.entropy_sum;
  state.counters["correct_diff"] = static_cast<double>(fused.correct - today.correct);
  state.counters["loss_per_token"] = fused.loss_sum / static_cast<double>(fused.count);
}
BENCHMARK(BM_StatsAgainstToday)
    ->ArgName("C")
    ->Arg(512)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// bf16 mixed precision: AMX where present, else (ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16, or a CPU
// without AMX) the widened path of ops/cpu/bf16_matmul_path.h. vb: the vocabulary block of both
// the logits and the gradient products (0: the defaults in lm_head_ce_bf16.cpp).
void BM_FusedBf16(benchmark::State& state) {
  const int64_t C = state.range(0);
  const Inputs& in = bf16_inputs(C);
  sft::ops::LmHeadWorkspace ws;
  ws.tuning.rows_per_chunk = state.range(1);
  ws.tuning.vocab_block = state.range(2);
  sft::ops::WorkspaceArena arena;
  ws.memory = arena.get(
      sft::ops::lm_head_kernel_workspace_bytes<uint16_t>(kTokens, C, kVocab, false, ws.tuning));
  std::vector<float> dx(static_cast<size_t>(kTokens * C)), dw(static_cast<size_t>(kVocab * C));
  const float scale = 1.0f / kTokens;
  sft::ops::lm_head_cross_entropy_bf16(dx.data(), dw.data(), in.xb.data(), in.wb.data(),
                                       in.y.data(), scale, kTokens, C, kVocab, ws);
  for (auto _ : state) {
    const sft::ops::LmHeadStats s =
        sft::ops::lm_head_cross_entropy_bf16(dx.data(), dw.data(), in.xb.data(), in.wb.data(),
                                             in.y.data(), scale, kTokens, C, kVocab, ws);
    benchmark::DoNotOptimize(s);
  }
  report(state, C);
}
BENCHMARK(BM_FusedBf16)
    ->ArgNames({"C", "m", "vb"})
    ->ArgsProduct({{512, 1024}, {0, 512, 1024}, {0}})
    ->ArgsProduct({{1024}, {0}, {1024, 2048, 4096, 16384}})
    ->Args({2048, 0, 0})  // Qwen3-1.7B's head, trained (modules_to_save)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A frozen head (QLoRA, LoRA without the head in modules_to_save): logits + CE + dX, no dW.
// C 2048 is Qwen3-1.7B's. One thread CPU time: SFT_NUM_THREADS=1 and --benchmark_filter.
// Before/after bits: SFT_LM_HEAD_DUMP=/tmp/a (one build), =/tmp/b (the other), cmp the files.
void BM_FrozenBf16(benchmark::State& state) {
  const int64_t C = state.range(0);
  const Inputs& in = bf16_inputs(C);
  sft::ops::LmHeadWorkspace ws;
  sft::ops::WorkspaceArena arena;
  ws.memory = arena.get(
      sft::ops::lm_head_kernel_workspace_bytes<uint16_t>(kTokens, C, kVocab, false, ws.tuning));
  std::vector<float> dx(static_cast<size_t>(kTokens * C));
  const float scale = 1.0f / kTokens;
  // Warm-up: the first call touches the workspace's pages (311 MB of bf16 logits at T 1024;
  // first-touch page faults are not the kernel's cost, and a training step reuses its arena).
  const sft::ops::LmHeadStats first = sft::ops::lm_head_cross_entropy_bf16(
      dx.data(), nullptr, in.xb.data(), in.wb.data(), in.y.data(), scale, kTokens, C, kVocab, ws);
  // SFT_LM_HEAD_DUMP=prefix writes the loss and entropy sums and dX as raw bytes to
  // prefix.C<C>, so that two builds' bits can be compared with cmp.
  if (const char* prefix = std::getenv("SFT_LM_HEAD_DUMP")) {
    std::ofstream out(std::string(prefix) + ".C" + std::to_string(C), std::ios::binary);
    out.write(reinterpret_cast<const char*>(&first.loss_sum), sizeof(first.loss_sum));
    out.write(reinterpret_cast<const char*>(&first.entropy_sum), sizeof(first.entropy_sum));
    out.write(reinterpret_cast<const char*>(dx.data()),
              static_cast<std::streamsize>(dx.size() * sizeof(float)));
  }
  for (auto _ : state) {
    const sft::ops::LmHeadStats s = sft::ops::lm_head_cross_entropy_bf16(
        dx.data(), nullptr, in.xb.data(), in.wb.data(), in.y.data(), scale, kTokens, C, kVocab, ws);
    benchmark::DoNotOptimize(s);
  }
  report(state, C, 4.0);
}
BENCHMARK(BM_FrozenBf16)
    ->ArgName("C")
    ->Arg(1024)
    ->Arg(2048)
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

}  // namespace
