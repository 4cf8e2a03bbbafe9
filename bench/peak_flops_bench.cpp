// The machine's single-precision FMA peak, for one thread and for all hardware threads:
// independent chains of AVX-512 (else AVX2) fused multiply-adds, enough of them to hide
// the FMA latency on two ports. This is the denominator of every "fraction of peak" in
// docs/benchmarks.md. Run: build/bench/bench_peak_flops
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <thread>
#include <vector>

namespace {

constexpr int kChains = 12;
constexpr long kIterations = 1 << 17;

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec splat(float x) {
  return _mm512_set1_ps(x);
}
inline Vec fma(Vec a, Vec b, Vec c) {
  return _mm512_fmadd_ps(a, b, c);
}
inline float reduce(Vec v) {
  return _mm512_reduce_add_ps(v);
}
#else
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec splat(float x) {
  return _mm256_set1_ps(x);
}
inline Vec fma(Vec a, Vec b, Vec c) {
  return _mm256_fmadd_ps(a, b, c);
}
inline float reduce(Vec v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float s = 0;
  for (float x : lanes) s += x;
  return s;
}
#endif

constexpr double kFlopsPerCall = 2.0 * kChains * kLanes * static_cast<double>(kIterations);

float fma_kernel(float seed) {
  Vec acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = splat(seed + static_cast<float>(c));
  const Vec a = splat(0.999999f), b = splat(1e-7f);
  for (long it = 0; it < kIterations; ++it) {
    for (int c = 0; c < kChains; ++c) acc[c] = fma(acc[c], a, b);
  }
  float sum = 0;
  for (int c = 0; c < kChains; ++c) sum += reduce(acc[c]);
  return sum;
}

void BM_PeakFmaOneThread(benchmark::State& state) {
  float seed = 1.0f;
  for (auto _ : state) benchmark::DoNotOptimize(seed = fma_kernel(seed) * 1e-9f + 1.0f);
  state.counters["FLOP/s"] = benchmark::Counter(
      kFlopsPerCall * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PeakFmaOneThread)->UseRealTime();

void BM_PeakFmaAllThreads(benchmark::State& state) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (auto _ : state) {
    std::vector<std::thread> pool;
    std::vector<float> out(threads);
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { out[t] = fma_kernel(1.0f + static_cast<float>(t)); });
    for (auto& th : pool) th.join();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(kFlopsPerCall * threads * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PeakFmaAllThreads)->UseRealTime();

}  // namespace
