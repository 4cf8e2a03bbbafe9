// Register-only arithmetic peaks of this machine, on one and on two threads: the denominators
// of every "fraction of peak" in docs/benchmarks.md.
//   fma_f32      AVX-512 (else AVX2) vfmadd, 12 independent chains to hide the latency on two
//                ports: 2 FLOPs × 16 (8) lanes per instruction.
//   dpbf16       AVX512-BF16 vdpbf16ps, 12 chains: each instruction does, per fp32 lane, two
//                bf16 products and adds both into the lane: 16 lanes × 2 products × 2 = 64 FLOPs.
//   amx_bf16     AMX tdpbf16ps on six independent accumulator tiles (C 16×16 fp32 += A 16×32
//                bf16 · B 32×16 bf16): 16 · 16 · 32 · 2 = 16384 FLOPs per instruction.
// Each kernel is compiled for its ISA with a target attribute and chosen at run time, so the
// binary runs on any x86-64 and reports "skipped" for an ISA the CPU (or the kernel, for AMX:
// Linux grants the tile state only on request, arch_prctl(ARCH_REQ_XCOMP_PERM)) lacks.
// Threads are started per measured iteration; each runs ~5 ms of work, so the start-up is
// under 1% of the time. Run: build/bench/bench_peak_flops --benchmark_repetitions=5
//                                --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace {

constexpr int kChains = 12;

// ---- CPU feature checks (CPUID leaf 7; the OS state checks are the compiler's) -----------

bool has_avx512f() {
  return __builtin_cpu_supports("avx512f");
}

bool has_avx2_fma() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool has_avx512bf16() {
  unsigned a, b, c, d;
  if (!has_avx512f() || !__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
  return (a >> 5) & 1u;
}

// AMX-TILE and AMX-BF16 in CPUID, and Linux's permission to use the tile data state.
bool amx_ready() {
  static const bool ready = [] {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool tile = (d >> 24) & 1u, bf16 = (d >> 22) & 1u;
    if (!tile || !bf16) return false;
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ready;
}

// ---- kernels: each returns a value that depends on every accumulator ---------------------

constexpr long kFmaIterations = 1 << 21;
constexpr long kAmxIterations = 1 << 16;
constexpr int kAmxAccumulators = 6;

__attribute__((target("avx512f"))) float fma512_kernel(float seed) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(seed + static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < kFmaIterations; ++it)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  float sum = 0;
  for (int c = 0; c < kChains; ++c) sum += _mm512_reduce_add_ps(acc[c]);
  return sum;
}

__attribute__((target("avx2,fma"))) float fma256_kernel(float seed) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(seed + static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < kFmaIterations; ++it)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  alignas(32) float lanes[8];
  float sum = 0;
  for (int c = 0; c < kChains; ++c) {
    _mm256_store_ps(lanes, acc[c]);
    for (float x : lanes) sum += x;
  }
  return sum;
}

__attribute__((target("avx512f,avx512bf16"))) float dpbf16_kernel(float seed) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(seed + static_cast<float>(c));
  // bf16 bits: 1.0 and ~1e-7, so the accumulators barely move and never overflow.
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80);
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x33d7);
  for (long it = 0; it < kFmaIterations; ++it)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  float sum = 0;
  for (int c = 0; c < kChains; ++c) sum += _mm512_reduce_add_ps(acc[c]);
  return sum;
}

// The 64-byte tile configuration of palette 1 (Intel SDM, LDTILECFG).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile,amx-bf16"))) float amx_kernel(float seed) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.bytes_per_row[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
  alignas(64) uint16_t a[16 * 32], b[16 * 32];
  for (uint16_t& x : a) x = 0x3f80;  // 1.0
  for (uint16_t& x : b) x = 0x33d7;  // ~1e-7
  alignas(64) float c[16 * 16];
  for (float& x : c) x = seed;
  _tile_loadd(0, c, 64);
  _tile_loadd(1, c, 64);
  _tile_loadd(2, c, 64);
  _tile_loadd(3, c, 64);
  _tile_loadd(4, c, 64);
  _tile_loadd(5, c, 64);
  _tile_loadd(6, a, 64);
  _tile_loadd(7, b, 64);
  for (long it = 0; it < kAmxIterations; ++it) {
    _tile_dpbf16ps(0, 6, 7);
    _tile_dpbf16ps(1, 6, 7);
    _tile_dpbf16ps(2, 6, 7);
    _tile_dpbf16ps(3, 6, 7);
    _tile_dpbf16ps(4, 6, 7);
    _tile_dpbf16ps(5, 6, 7);
  }
  float sum = 0;
  _tile_stored(0, c, 64);
  for (float x : c) sum += x;
  _tile_stored(5, c, 64);
  for (float x : c) sum += x;
  _tile_release();
  return sum;
}

// ---- the benchmarks -------------------------------------------------------------------------

struct Kernel {
  float (*fn)(float);
  double flops_per_call;
};

void run_threads(benchmark::State& state, const Kernel& k) {
  const int threads = static_cast<int>(state.range(0));
  std::vector<float> out(static_cast<size_t>(threads));
  for (auto _ : state) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
      pool.emplace_back([&, t] { out[t] = k.fn(1.0f + static_cast<float>(t)); });
    out[0] = k.fn(1.0f);
    for (auto& th : pool) th.join();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["threads"] = threads;
  state.counters["FLOP/s"] =
      benchmark::Counter(k.flops_per_call * threads * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void BM_PeakFmaF32(benchmark::State& state) {
  if (has_avx512f()) {
    state.SetLabel("avx512");
    run_threads(state, {fma512_kernel, 2.0 * kChains * 16 * double(kFmaIterations)});
  } else if (has_avx2_fma()) {
    state.SetLabel("avx2");
    run_threads(state, {fma256_kernel, 2.0 * kChains * 8 * double(kFmaIterations)});
  } else {
    state.SkipWithError("skipped: the CPU has neither AVX-512 nor AVX2+FMA");
  }
}
BENCHMARK(BM_PeakFmaF32)->Arg(1)->Arg(2)->UseRealTime();

void BM_PeakDpbf16(benchmark::State& state) {
  if (!has_avx512bf16()) {
    state.SkipWithError("skipped: the CPU lacks AVX512-BF16 (vdpbf16ps)");
    return;
  }
  run_threads(state, {dpbf16_kernel, 64.0 * kChains * double(kFmaIterations)});
}
BENCHMARK(BM_PeakDpbf16)->Arg(1)->Arg(2)->UseRealTime();

void BM_PeakAmxBf16(benchmark::State& state) {
  if (!amx_ready()) {
    state.SkipWithError("skipped: the CPU lacks AMX-BF16, or Linux refused the tile state");
    return;
  }
  run_threads(state, {amx_kernel, 16.0 * 16 * 32 * 2 * kAmxAccumulators * double(kAmxIterations)});
}
BENCHMARK(BM_PeakAmxBf16)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace
