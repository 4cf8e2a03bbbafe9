// Attention of one Qwen3-0.6B layer (H 16, Hkv 8, D 128, fp32) on 1024 tokens: the tiled
// kernel (ops/attention.h) against the eager reference (ops/cpu/attention_reference.h, per document
// with saved probabilities), as one 1024-token document (arg 0), as documents of about 200 tokens
// (arg 1) and as a packed row of chat documents, 384 + 256 + 192 + 192 (arg 2; the training
// data's median document is ≈ 335 tokens).
// Counters: saved_bytes (what forward keeps for backward per layer: lse vs probabilities),
// GFLOP/s over the causal multiply-adds of the products each pass runs, 2 · D · H · Σ n(n+1)/2
// per product: forward 2 (Q Kᵀ, P V), backward 5 (Q Kᵀ recomputed, dV, dP, dK, dQ), forward +
// backward 7. BM_FlashTiles sweeps the tile shape (the choice in ops/attention.h).
// BM_FlashBf16* run the bf16 kernels (AMX where present, else the widened AVX-512 product; run
// with ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 for a CPU without AMX) on the same values rounded to
// bf16.
// The fp32 kernel's tile products are AVX-512 microkernels where the CPU has it; run with
// SFT_CPU_ISA=generic for the baseline (a library GEMM per tile). BM_TileProduct times one
// microkernel product alone on the kernel's tile shapes (operands hot in cache).
#include <benchmark/benchmark.h>

#include <vector>

#include "core/half.h"
#include "core/tensor.h"
#include "ops/attention.h"
#include "ops/cpu/attention_microkernel.h"
#include "ops/cpu/attention_reference.h"
#include "ops/cpu/cpu_features.h"

namespace {

using sft::ops::AttentionSegment;

const sft::ops::AttentionWorkspace kDefault;  // the default tile shape
constexpr int64_t kH = 16, kHkv = 8, kD = 128, kT = 1024;

std::vector<int64_t> documents(int64_t which) {
  if (which == 0) return {kT};
  if (which == 1) return {200, 210, 190, 205, 219};  // sums to 1024
  return {384, 256, 192, 192};                       // sums to 1024
}

// Which passes a benchmark times, and the tile products (of the forward's two) they run.
enum class Passes { kForward, kBackward, kBoth };
double products(Passes p) {
  return p == Passes::kForward ? 2.0 : p == Passes::kBackward ? 5.0 : 7.0;
}

struct Data {
  std::vector<int64_t> docs;
  std::vector<AttentionSegment> segs;
  std::vector<float> q, k, v, dout, out, lse, dq, dk, dv;
  explicit Data(int64_t which) : docs(documents(which)) {
    int64_t at = 0;
    for (int64_t n : docs) {
      segs.push_back({at, n, at, n, 0});
      at += n;
    }
    // A cheap fixed pattern in [-1, 1): Box–Muller normals for 6M values would dominate a run.
    uint32_t state = 12345;
    auto fill = [&](std::vector<float>& x, int64_t n) {
      x.resize(static_cast<size_t>(n));
      for (float& e : x) {
        state = state * 1664525u + 1013904223u;
        e = static_cast<float>(state >> 8) * 0x1p-23f - 1.0f;
      }
    };
    fill(q, kT * kH * kD);
    fill(k, kT * kHkv * kD);
    fill(v, kT * kHkv * kD);
    fill(dout, kT * kH * kD);
    out.resize(q.size());
    dq.resize(q.size());
    lse.resize(static_cast<size_t>(kT * kH));
    dk.resize(k.size());
    dv.resize(k.size());
  }
  // One tile product over every causal (query, key) pair: a multiply-add is 2 FLOP.
  double causal_flops_per_product() const {
    double f = 0;
    for (int64_t n : docs)
      f += 2.0 * static_cast<double>(n) * static_cast<double>(n + 1) / 2 * kD * kH;
    return f;
  }
  double probs_bytes() const {
    double b = 0;
    for (int64_t n : docs) b += static_cast<double>(kH * n * n) * sizeof(float);
    return b;
  }
};

// The workspace of the data's packed documents (as the model sizes it: q and k rows alike).
size_t workspace_bytes(const Data& d, sft::DType dtype, const sft::ops::AttentionDims& dims,
                       const sft::ops::AttentionWorkspace& tuning) {
  int64_t rows = 0;
  for (int64_t n : d.docs) rows += n;
  return sft::ops::attention_workspace_bytes({.dtype = dtype, .q_rows = rows, .k_rows = rows}, dims,
                                             tuning);
}

void flash(benchmark::State& state, int64_t which, Passes passes, int64_t bq, int64_t bk) {
  Data d(which);
  sft::ops::AttentionWorkspace ws;
  ws.q_tile = bq;
  ws.k_tile = bk;
  const sft::ops::AttentionDims dims{kH, kHkv, kD, 0};
  sft::ops::WorkspaceArena arena;
  const size_t bytes = workspace_bytes(d, sft::DType::kF32, dims, ws);
  ws.memory = arena.get(bytes);
  auto forward = [&] {
    sft::ops::attention_forward(d.out.data(), d.lse.data(), d.q.data(), d.k.data(), d.v.data(),
                                d.segs, dims, ws);
  };
  if (passes == Passes::kBackward) forward();  // backward's inputs, outside the timing
  for (auto _ : state) {
    if (passes != Passes::kBackward) forward();
    if (passes != Passes::kForward)
      sft::ops::attention_backward(d.dq.data(), d.dk.data(), d.dv.data(), d.dout.data(),
                                   d.out.data(), d.lse.data(), d.q.data(), d.k.data(), d.v.data(),
                                   d.segs, dims, ws);
    benchmark::DoNotOptimize(d.dq.data());
    benchmark::DoNotOptimize(d.out.data());
  }
  const double flops = d.causal_flops_per_product() * products(passes);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["saved_bytes"] = static_cast<double>(d.lse.size() * sizeof(float));
  state.counters["workspace_bytes"] = static_cast<double>(bytes);
}

// The bf16 kernels (attention_forward_bf16 / backward: AMX where present) on the same values
// rounded to bf16, out saved as bf16 as the decoder layer saves it.
void flash_bf16(benchmark::State& state, int64_t which, bool backward, int64_t bq, int64_t bk) {
  Data d(which);
  auto narrow = [](const std::vector<float>& x) {
    std::vector<uint16_t> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = sft::f32_to_bf16(x[i]);
    return y;
  };
  const std::vector<uint16_t> q = narrow(d.q), k = narrow(d.k), v = narrow(d.v);
  std::vector<uint16_t> out(d.q.size());
  sft::ops::AttentionWorkspace ws;
  ws.q_tile = bq;
  ws.k_tile = bk;
  const sft::ops::AttentionDims dims{kH, kHkv, kD, 0};
  sft::ops::WorkspaceArena arena;
  const size_t bytes = workspace_bytes(d, sft::DType::kBF16, dims, ws);
  ws.memory = arena.get(bytes);
  for (auto _ : state) {
    sft::ops::attention_forward_bf16(out.data(), d.lse.data(), q.data(), k.data(), v.data(), d.segs,
                                     dims, ws);
    if (backward)
      sft::ops::attention_backward_bf16(d.dq.data(), d.dk.data(), d.dv.data(), d.dout.data(),
                                        out.data(), d.lse.data(), q.data(), k.data(), v.data(),
                                        d.segs, dims, ws);
    benchmark::DoNotOptimize(d.dq.data());
  }
  const double flops = d.causal_flops_per_product() * (backward ? 7.0 : 2.0);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["workspace_bytes"] = static_cast<double>(bytes);
}

void eager(benchmark::State& state, int64_t which, bool backward) {
  Data d(which);
  std::vector<float> probs(static_cast<size_t>(d.probs_bytes() / sizeof(float)));
  std::vector<float> scratch(static_cast<size_t>(kT * kT));
  for (auto _ : state) {
    int64_t p = 0;
    for (const AttentionSegment& s : d.segs) {
      const sft::ops::cpu::AttentionShape sh{s.q_len, s.k_len, 0, kH, kHkv, kD, 0};
      const int64_t qo = s.q_begin * kH * kD, ko = s.k_begin * kHkv * kD;
      sft::ops::cpu::attention_forward(d.out.data() + qo, probs.data() + p, d.q.data() + qo,
                                       d.k.data() + ko, d.v.data() + ko, sh);
      if (backward)
        sft::ops::cpu::attention_backward(d.dq.data() + qo, d.dk.data() + ko, d.dv.data() + ko,
                                          scratch.data(), d.dout.data() + qo, probs.data() + p,
                                          d.q.data() + qo, d.k.data() + ko, d.v.data() + ko, sh);
      p += kH * s.q_len * s.k_len;
    }
    benchmark::DoNotOptimize(d.dq.data());
  }
  // The eager backward runs the four gradient products on saved probabilities (no recompute).
  const double flops = d.causal_flops_per_product() * (backward ? 6.0 : 2.0);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["saved_bytes"] = d.probs_bytes();
}

// Arg 0: 0 = one 1024-token document, 1 = five documents of about 200, 2 = 384 + 256 + 192 + 192.
void BM_FlashForward(benchmark::State& s) {
  flash(s, s.range(0), Passes::kForward, kDefault.q_tile, kDefault.k_tile);
}
void BM_FlashBackward(benchmark::State& s) {
  flash(s, s.range(0), Passes::kBackward, kDefault.q_tile, kDefault.k_tile);
}
void BM_FlashForwardBackward(benchmark::State& s) {
  flash(s, s.range(0), Passes::kBoth, kDefault.q_tile, kDefault.k_tile);
}
void BM_FlashBf16Forward(benchmark::State& s) {
  flash_bf16(s, s.range(0), false, kDefault.q_tile, kDefault.k_tile);
}
void BM_FlashBf16ForwardBackward(benchmark::State& s) {
  flash_bf16(s, s.range(0), true, kDefault.q_tile, kDefault.k_tile);
}
// Args: q tile, k tile, documents; forward + backward in bf16.
void BM_FlashBf16Tiles(benchmark::State& s) {
  flash_bf16(s, s.range(2), true, s.range(0), s.range(1));
}
void BM_EagerForward(benchmark::State& s) {
  eager(s, s.range(0), false);
}
void BM_EagerForwardBackward(benchmark::State& s) {
  eager(s, s.range(0), true);
}
// Args: q tile, k tile, documents (as above); forward + backward.
void BM_FlashTiles(benchmark::State& s) {
  flash(s, s.range(2), Passes::kBoth, s.range(0), s.range(1));
}

// Arg: 0 = S = Q Kᵀ (128 × 64 over D 128, Kᵀ packed), 1 = acc += P V (128 × 128 over 64 keys),
// 2 = dV += Pᵀ dO (64 × 128 over 128 queries, A transposed). 64-byte aligned, packed strides.
void BM_TileProduct(benchmark::State& state) {
  using sft::ops::cpu::attention_microkernel::ALayout;
  if (!sft::ops::cpu::use_avx512()) {
    state.SkipWithError("no AVX-512 (or SFT_CPU_ISA=generic)");
    return;
  }
  struct Shape {
    int64_t M, N, K;
    ALayout layout;
    bool accumulate;
  };
  const Shape shapes[] = {{128, 64, kD, ALayout::kRows, false},
                          {128, kD, 64, ALayout::kRows, true},
                          {64, kD, 128, ALayout::kColumns, true}};
  const Shape& z = shapes[state.range(0)];
  const int64_t a_cols = z.layout == ALayout::kRows ? z.K : z.M;
  const int64_t a_rows = z.layout == ALayout::kRows ? z.M : z.K;
  // Owned tensors: 64-byte aligned, as the kernel's packed operands.
  sft::Tensor a = sft::Tensor::zeros(sft::DType::kF32, {a_rows, a_cols});
  sft::Tensor b = sft::Tensor::zeros(sft::DType::kF32, {z.K, z.N});
  sft::Tensor c = sft::Tensor::zeros(sft::DType::kF32, {z.M, z.N});
  for (float& x : a.mutable_values<float>()) x = 0.5f;
  for (float& x : b.mutable_values<float>()) x = 0.25f;
  float* cp = c.mutable_values<float>().data();
  for (auto _ : state) {
    sft::ops::cpu::attention_microkernel::gemm({.c = cp,
                                                .ldc = z.N,
                                                .a = a.values<float>().data(),
                                                .lda = a_cols,
                                                .a_layout = z.layout,
                                                .b = b.values<float>().data(),
                                                .ldb = z.N,
                                                .M = z.M,
                                                .N = z.N,
                                                .K = z.K,
                                                .accumulate = z.accumulate});
    benchmark::DoNotOptimize(cp);
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(z.M * z.N * z.K),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_TileProduct)->DenseRange(0, 2);
BENCHMARK(BM_FlashForward)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FlashBackward)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FlashForwardBackward)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FlashBf16Forward)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FlashBf16ForwardBackward)
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_FlashBf16Tiles)
    ->ArgsProduct({{64, 128, 256}, {64, 128, 256}, {0}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_EagerForward)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EagerForwardBackward)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_FlashTiles)
    ->ArgsProduct({{32, 64, 128}, {64, 128}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
