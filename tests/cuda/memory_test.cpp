// Device arenas, carving, pinned buffers and host ↔ device copies (ops/cuda/cuda_memory.h).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cuda_test_support.h"
#include "ops/cuda/cuda_memory.h"

namespace sft {
namespace {

using ops::View;
namespace cuda = ops::cuda;

TEST(CudaMemory, ArenaGrowsOnlyWhenLargerAndZeroFills) {
  SFT_SKIP_WITHOUT_CUDA();
  cuda::DeviceArena arena;
  EXPECT_EQ(arena.device(), Device::kCuda);
  arena.reserve(1000);
  EXPECT_EQ(arena.allocations(), 1);
  EXPECT_EQ(arena.capacity() % kArenaAlignment, 0u);
  EXPECT_GE(arena.capacity(), 1000u);
  arena.reserve(10);
  EXPECT_EQ(arena.allocations(), 1);
  std::vector<unsigned char> back(1000, 0xff);
  cuda::copy_to_host(back.data(), arena.data(), back.size());
  for (unsigned char b : back) ASSERT_EQ(b, 0);
  arena.reserve(5000);
  EXPECT_EQ(arena.allocations(), 2);
  cuda::DeviceArena moved = std::move(arena);
  EXPECT_EQ(moved.capacity(), 5056u);
  EXPECT_EQ(arena.data(), nullptr);
}

TEST(CudaMemory, CarveMeasuresThenHandsOutAlignedViews) {
  SFT_SKIP_WITHOUT_CUDA();
  cuda::DeviceArena arena;
  float* a = nullptr;
  uint16_t* b = nullptr;
  carve(arena, [&](auto& carver) {
    a = carver.template take<float>(3);
    b = carver.template take<uint16_t>(100);
  });
  EXPECT_EQ(arena.allocations(), 1);
  EXPECT_EQ(arena.capacity(), 64u + 256u);
  EXPECT_EQ(reinterpret_cast<std::byte*>(a), arena.data());
  EXPECT_EQ(reinterpret_cast<std::byte*>(b), arena.data() + 64);
}

TEST(CudaMemory, ViewsRoundTripThroughPinnedMemory) {
  SFT_SKIP_WITHOUT_CUDA();
  cuda::PinnedBuffer pinned;
  pinned.reserve(6 * sizeof(float));
  auto* host = reinterpret_cast<float*>(pinned.data());
  for (int i = 0; i < 6; ++i) host[i] = 0.5f * static_cast<float>(i) - 1;
  cuda::DeviceArena arena;
  arena.reserve(6 * sizeof(float));
  const View device{arena.data(), DType::kF32, 2, 3, Device::kCuda};
  cuda::upload(device, ops::view_of(host, 2, 3));
  std::vector<float> back(6, -7.0f);
  cuda::download(ops::view_of(back.data(), 3, 2), device.reshaped(3, 2));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back[static_cast<size_t>(i)], host[i]);
}

TEST(CudaMemory, ScratchIsReusedAndGrows) {
  SFT_SKIP_WITHOUT_CUDA();
  void* small = cuda::scratch(128);
  EXPECT_EQ(cuda::scratch(64), small);
  EXPECT_NE(cuda::scratch(size_t{64} << 20), nullptr);
}

}  // namespace
}  // namespace sft
