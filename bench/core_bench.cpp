// Micro-benchmarks of the core conversions and of opening a safetensors checkpoint.
// Run: build/bench/bench_core
#include <benchmark/benchmark.h>

#include <filesystem>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "io/safetensors.h"

namespace {

std::vector<float> random_floats(size_t n) {
  sft::Rng rng(3);
  std::vector<float> v(n);
  for (float& x : v) x = rng.normal();
  return v;
}

void BM_F32ToBF16(benchmark::State& state) {
  const std::vector<float> in = random_floats(static_cast<size_t>(state.range(0)));
  std::vector<uint16_t> out(in.size());
  for (auto _ : state) {
    for (size_t i = 0; i < in.size(); ++i) out[i] = sft::f32_to_bf16(in[i]);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size() * sizeof(float)));
}
BENCHMARK(BM_F32ToBF16)->Arg(1 << 20);

void BM_BF16ToF32(benchmark::State& state) {
  std::vector<uint16_t> in(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint16_t>(0x3f80 + (i & 0x7f));
  std::vector<float> out(in.size());
  for (auto _ : state) {
    for (size_t i = 0; i < in.size(); ++i) out[i] = sft::bf16_to_f32(in[i]);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size() * sizeof(uint16_t)));
}
BENCHMARK(BM_BF16ToF32)->Arg(1 << 20);

void BM_F32ToF16(benchmark::State& state) {
  const std::vector<float> in = random_floats(static_cast<size_t>(state.range(0)));
  std::vector<uint16_t> out(in.size());
  for (auto _ : state) {
    for (size_t i = 0; i < in.size(); ++i) out[i] = sft::f32_to_f16(in[i]);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size() * sizeof(float)));
}
BENCHMARK(BM_F32ToF16)->Arg(1 << 20);

// Opening a checkpoint (mmap + header validation) of many tensors: must stay negligible.
void BM_OpenCheckpoint(benchmark::State& state) {
  const std::string dir = std::filesystem::temp_directory_path() / "sft_bench_checkpoint";
  std::filesystem::create_directories(dir);
  std::vector<sft::NamedTensor> tensors;
  for (int i = 0; i < state.range(0); ++i) {
    tensors.push_back({"model.layers." + std::to_string(i) + ".weight",
                       sft::Tensor::zeros(sft::DType::kBF16, {64, 64})});
  }
  sft::write_safetensors(dir + "/model.safetensors", tensors);
  for (auto _ : state) benchmark::DoNotOptimize(sft::SafetensorsCheckpoint::open_dir(dir));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_OpenCheckpoint)->Arg(300)->Unit(benchmark::kMicrosecond);

}  // namespace
