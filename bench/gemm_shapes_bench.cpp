// GFLOP/s of every GEMM of one training step, per library, on the model shapes of the
// end-to-end benchmarks: (a) the 103M Qwen3 shape of tools/bench_train_e2e.py (C 512, I 1536,
// 8 heads / 4 kv of 64, V 151936) and (b) Qwen3-0.6B (C 1024, I 3072, 16 heads / 8 kv of 128,
// V 151936), both at T = 1024 tokens. For each projection W [O, I] (k and v share a shape, as
// do gate and up; qkv is q, k and v stacked, as bf16 training runs them; the LM head is the
// tied embedding):
//   fwd  y[T, O]  = x[T, I] · Wᵀ         dx  dx[T, I] = dy[T, O] · W
//   dw   dW[O, I] += dy[T, O]ᵀ · x[T, I]
// in f32 on OpenBLAS (our pool split), on oneDNN and on our own AVX-512 microkernel
// (ops/cpu/gemm_microkernel.h), and in bf16 (f32 out) on oneDNN, each through the same entry
// points ops::matmul uses; ops_f32 / ops_bf16 are ops::matmul<float> / ops::matmul_bf16 as the
// step calls them (the f32 policy; the bf16 path of bf16_matmul_path.h, e.g. widened under
// ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16); and "<model>/lm_head_ce/..." the fused LM head's own calls
// (512-row chunks, strided 16384-wide vocabulary blocks of dZ). The label is the kernel oneDNN
// picked. CPU time is the whole process's, so on a shared machine GFLOP per (CPU time / threads)
// estimates the idle rate.
// "/cold" variants evict the caches before every call (a 512 MiB buffer rewritten outside the
// timing), as a training step does between one layer's GEMM and the next use of its operands:
// AdamW streams every weight, and the elementwise kernels between products stream activations.
// Run: build/bench/bench_gemm_shapes --benchmark_repetitions=5 --benchmark_report_aggregates_only
//      (SFT_NUM_THREADS sets the thread count; --benchmark_filter=0.6B/lm_head etc.)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "ops/cpu/cpu_features.h"
#include "ops/cpu/gemm_microkernel.h"
#include "ops/cpu/matmul_openblas.h"
#include "ops/cpu/onednn_matmul.h"
#include "ops/matmul_path.h"
#include "ops/ops.h"

namespace {

using sft::ops::onednn::Operand;

struct Projection {
  const char* name;
  int64_t out, in;  // W is [out, in]
};

struct Model {
  const char* name;
  std::vector<Projection> projections;
};

constexpr int64_t kTokens = 1024;
constexpr int64_t kVocab = 151936;

std::vector<Model> models() {
  return {
      {"103M",
       {{"q_o", 512, 512},
        {"k_v", 256, 512},
        {"qkv", 1024, 512},
        {"gate_up", 1536, 512},
        {"down", 512, 1536},
        {"lm_head", kVocab, 512}}},
      {"0.6B",
       {{"q", 2048, 1024},
        {"k_v", 1024, 1024},
        {"qkv", 4096, 1024},
        {"o", 1024, 2048},
        {"gate_up", 3072, 1024},
        {"down", 1024, 3072},
        {"lm_head", kVocab, 1024}}},
  };
}

enum class Pass { fwd, dx, dw };
enum class Library { openblas_f32, onednn_f32, microkernel_f32, onednn_bf16, ops_f32, ops_bf16 };

// The GEMM of `pass` for projection p, as ops::matmul arguments (dense strides).
struct Gemm {
  int64_t M, N, K;
  bool ta, tb, accumulate;
  int64_t lda = 0, ldb = 0;  // 0: dense
};

Gemm gemm_of(Pass pass, const Projection& p) {
  switch (pass) {
    case Pass::fwd:
      return {kTokens, p.out, p.in, false, true, false};
    case Pass::dx:
      return {kTokens, p.in, p.out, false, false, false};
    case Pass::dw:
      return {p.out, p.in, kTokens, true, false, true};
  }
  return {};
}

// The fused LM head + CE's calls (ops/cpu/lm_head_ce.cpp) at its defaults: chunks of R = 512
// rows, dZ (R × V) read a vocabulary block of VB = 16384 columns at a time (row stride V):
//   fwd  Z[R, V] = X[R, C] · Wᵀ    dx  dX[R, C] += dZ[:, v0:v0+VB] · W[v0:v0+VB]
//   dw   dW[v0:v0+VB] += dZ[:, v0:v0+VB]ᵀ · X
Gemm lm_head_ce_gemm_of(Pass pass, int64_t C) {
  constexpr int64_t R = 512, VB = 16384;
  switch (pass) {
    case Pass::fwd:
      return {R, kVocab, C, false, true, false};
    case Pass::dx:
      return {R, C, VB, false, false, true, kVocab, C};
    case Pass::dw:
      return {VB, C, R, true, false, true, kVocab, C};
  }
  return {};
}

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  sft::Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = 0.05f * rng.normal();
  return v;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = sft::f32_to_bf16(v[i]);
  return out;
}

// Rewrites a buffer larger than the last-level cache, so the next call reads its operands from
// memory.
void evict_caches() {
  static std::vector<float> sweep(size_t{128} << 20);
  for (float& x : sweep) x += 1.0f;
  benchmark::DoNotOptimize(sweep.data());
  benchmark::ClobberMemory();
}

void run(benchmark::State& state, Gemm g, Library lib, bool cold) {
  if (lib == Library::onednn_bf16 && !sft::ops::onednn::supports_bf16()) {
    state.SkipWithError("skipped: oneDNN has no bf16 matmul on this CPU (below AVX-512)");
    return;
  }
  if (lib == Library::microkernel_f32 && !sft::ops::cpu::use_avx512()) {
    state.SkipWithError("skipped: our microkernel needs AVX-512");
    return;
  }
  const int64_t lda = g.lda ? g.lda : (g.ta ? g.M : g.K), ldb = g.ldb ? g.ldb : (g.tb ? g.K : g.N),
                ldc = g.N;
  const std::vector<float> a = random_floats((g.ta ? g.K : g.M) * lda, 1),
                           b = random_floats((g.tb ? g.N : g.K) * ldb, 2);
  std::vector<float> c(static_cast<size_t>(g.M * g.N), 0.0f);
  std::vector<uint16_t> a16, b16;
  if (lib == Library::onednn_bf16 || lib == Library::ops_bf16) a16 = to_bf16(a), b16 = to_bf16(b);
  if (lib == Library::ops_bf16) state.SetLabel(sft::ops::matmul_bf16_path());
  if (lib == Library::onednn_f32 || lib == Library::onednn_bf16)
    state.SetLabel(sft::ops::onednn::implementation(
        lib == Library::onednn_bf16 ? Operand::bf16 : Operand::f32, g.M, g.N, g.K, g.ta, g.tb));
  auto once = [&] {
    switch (lib) {
      case Library::openblas_f32:
        sft::ops::matmul_openblas(c.data(), a.data(), b.data(), g.M, g.N, g.K, g.ta, g.tb,
                                  g.accumulate, lda, ldb, ldc, true);
        break;
      case Library::onednn_f32:
        sft::ops::onednn::matmul(Operand::f32, c.data(), a.data(), b.data(), g.M, g.N, g.K, g.ta,
                                 g.tb, g.accumulate, lda, ldb, ldc);
        break;
      case Library::microkernel_f32:
        sft::ops::cpu::gemm_microkernel::gemm(
            {c.data(), ldc, a.data(), lda, g.ta, b.data(), ldb, g.tb, g.M, g.N, g.K, g.accumulate},
            sft::ops::cpu::gemm_microkernel::Threads::kPool);
        break;
      case Library::onednn_bf16:
        sft::ops::onednn::matmul(Operand::bf16, c.data(), a16.data(), b16.data(), g.M, g.N, g.K,
                                 g.ta, g.tb, g.accumulate, lda, ldb, ldc);
        break;
      case Library::ops_f32:
        sft::ops::matmul(c.data(), a.data(), b.data(), g.M, g.N, g.K, g.ta, g.tb, g.accumulate, lda,
                         ldb, ldc);
        break;
      case Library::ops_bf16:
        sft::ops::matmul_bf16(c.data(), a16.data(), b16.data(), g.M, g.N, g.K, g.ta, g.tb,
                              g.accumulate, lda, ldb, ldc);
        break;
    }
  };
  once();  // primitive creation and first-touch outside the timing
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      evict_caches();
      state.ResumeTiming();
    }
    once();
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(g.M) * double(g.N) * double(g.K) * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

void register_one(const std::string& shape, Gemm g, Library lib, const char* lib_name, bool cold) {
  const std::string name = shape + "/" + lib_name + "/" + std::to_string(g.M) + "x" +
                           std::to_string(g.N) + "x" + std::to_string(g.K) + (cold ? "/cold" : "");
  benchmark::RegisterBenchmark(name.c_str(),
                               [g, lib, cold](benchmark::State& s) { run(s, g, lib, cold); })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->MinTime(0.2);
}

void register_all() {
  const std::pair<Pass, const char*> passes[] = {
      {Pass::fwd, "fwd"}, {Pass::dx, "dx"}, {Pass::dw, "dw"}};
  const std::pair<Library, const char*> libs[] = {{Library::openblas_f32, "openblas_f32"},
                                                  {Library::onednn_f32, "onednn_f32"},
                                                  {Library::microkernel_f32, "microkernel_f32"},
                                                  {Library::onednn_bf16, "onednn_bf16"},
                                                  {Library::ops_f32, "ops_f32"},
                                                  {Library::ops_bf16, "ops_bf16"}};
  for (const Model& m : models())
    for (const Projection& p : m.projections)
      for (const auto& [pass, pass_name] : passes)
        for (const auto& [lib, lib_name] : libs)
          for (const bool cold : {false, true})
            register_one(std::string(m.name) + "/" + p.name + "/" + pass_name, gemm_of(pass, p),
                         lib, lib_name, cold);
  // The fused LM head's own calls: 512-row chunks, strided vocabulary blocks of dZ.
  for (const Model& m : models())
    for (const auto& [pass, pass_name] : passes)
      for (const auto& [lib, lib_name] : libs)
        for (const bool cold : {false, true})
          register_one(std::string(m.name) + "/lm_head_ce/" + pass_name,
                       lm_head_ce_gemm_of(pass, m.projections.back().in), lib, lib_name, cold);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
