// The training step does not touch the heap once the arenas have grown: forward (with the fused
// LM head), backward and the optimizer's kernels, counted by replacing the global operator new
// in this test binary. fp32 (OpenBLAS at these shapes): zero. bf16 runs on oneDNN, whose
// dnnl_primitive_execute builds its argument map on the heap on every call (inside the
// library, beyond our reach): there every steady-state step must allocate exactly as often as
// the one before, so nothing of ours grows or allocates per step. (Sanitizer builds keep
// their own allocator: the count runs in the Release build.)
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "io/safetensors.h"
#include "model/transformer.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "test_paths.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SFT_OWN_ALLOCATOR 1
#endif
#endif

namespace {
std::atomic<int64_t> g_allocations{0};
}  // namespace

#ifndef SFT_OWN_ALLOCATOR
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
#endif

namespace sft::model {
namespace {

Batch fixture_batch(const std::string& dir) {
  const SafetensorsFile f = SafetensorsFile::open(dir + "/expected.safetensors");
  auto ids = [&](const char* n) {
    auto v = f.tensor(n).values<int64_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  };
  return {ids("input_ids"), ids("labels"), ids("doc_lengths")};
}

class StepAllocations : public ::testing::TestWithParam<DType> {};

TEST_P(StepAllocations, NoneOnceTheArenasHaveGrown) {
#ifdef SFT_OWN_ALLOCATOR
  GTEST_SKIP() << "the sanitizer's allocator is not counted; the Release build checks this";
#endif
  const std::string dir = test::source_path("tests/fixtures/parity/qwen3_qknorm_linear");
  Transformer m = Transformer::load(dir);
  m.set_compute_dtype(GetParam());
  const Batch batch = fixture_batch(dir);
  m.zero_grad();
  ParameterSet& params = m.params();
  AdamW adamw(static_cast<size_t>(m.num_parameters()), AdamWOptions{});
  const std::vector<ParamSlice> slices = params.decay_slices();
  auto step = [&] {
    m.forward(batch, nullptr, 1.0 / 64);
    m.backward(1.0 / 64);
    clip_grad_norm(params.grads(), 1.0);
    adamw.step(params.values(), params.grads(), slices, 1e-3, params.bf16_arena());
    params.zero_grads();
  };
  step();
  step();
  std::vector<int64_t> per_step;
  per_step.reserve(3);
  for (int i = 0; i < 3; ++i) {
    const int64_t before = g_allocations.load();
    step();
    per_step.push_back(g_allocations.load() - before);
  }
  if (GetParam() == DType::kF32) {
    EXPECT_EQ(per_step[0] + per_step[1] + per_step[2], 0) << "heap allocations in 3 steps";
  } else {
    EXPECT_EQ(per_step[0], per_step[1]);
    EXPECT_EQ(per_step[1], per_step[2]);
  }
  EXPECT_EQ(m.arena_allocations(), 2) << "the activation and backward arenas grew once each";
}

INSTANTIATE_TEST_SUITE_P(ComputeDtypes, StepAllocations,
                         ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace sft::model
