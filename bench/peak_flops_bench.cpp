// The machine's single-precision FMA peak per core and for all cores: independent
// accumulator chains of fused multiply-adds the compiler vectorises (-march=native),
// long enough to hide FMA latency. Reported as FLOP/s (2 per FMA per lane).
// Run: build/bench/bench_peak_flops
#include <benchmark/benchmark.h>

#include <thread>
#include <vector>

namespace {

// 16 chains × 16 lanes: enough independent work for two FMA ports at 4-cycle latency with AVX-512.
constexpr int kChains = 16;
constexpr int kLanes = 16;
constexpr int kInner = 1 << 14;

float fma_kernel(float seed) {
  float acc[kChains][kLanes];
  for (int c = 0; c < kChains; ++c)
    for (int l = 0; l < kLanes; ++l) acc[c][l] = seed + static_cast<float>(c * kLanes + l) * 1e-7f;
  const float a = 0.999999f, b = 1e-7f;
  for (int it = 0; it < kInner; ++it) {
    for (int c = 0; c < kChains; ++c) {
      for (int l = 0; l < kLanes; ++l) acc[c][l] = acc[c][l] * a + b;
    }
  }
  float sum = 0;
  for (int c = 0; c < kChains; ++c)
    for (int l = 0; l < kLanes; ++l) sum += acc[c][l];
  return sum;
}

constexpr double kFlopsPerCall = 2.0 * kChains * kLanes * kInner;

void BM_PeakFmaOneThread(benchmark::State& state) {
  float seed = 1.0f;
  for (auto _ : state) benchmark::DoNotOptimize(seed = fma_kernel(seed) * 1e-9f + 1.0f);
  state.counters["FLOP/s"] = benchmark::Counter(kFlopsPerCall * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PeakFmaOneThread)->UseRealTime();

void BM_PeakFmaAllThreads(benchmark::State& state) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (auto _ : state) {
    std::vector<std::thread> pool;
    std::vector<float> out(threads);
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back([&, t] { out[t] = fma_kernel(1.0f + t); });
    for (auto& th : pool) th.join();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(kFlopsPerCall * threads * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PeakFmaAllThreads)->UseRealTime();

}  // namespace
