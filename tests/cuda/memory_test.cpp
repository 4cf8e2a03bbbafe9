// Arenas on the device and in pinned host memory (core/arena.h with ops/cuda/cuda_memory.h's
// allocators), carving, the cudaMalloc counter and host ↔ device copies.
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
  Arena arena(Device::kCuda);
  EXPECT_EQ(arena.device(), Device::kCuda);
  EXPECT_STREQ(arena.allocator().name, "cuda");
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
  Arena moved = std::move(arena);
  EXPECT_EQ(moved.capacity(), 5056u);
  EXPECT_EQ(moved.device(), Device::kCuda);
  EXPECT_EQ(arena.data(), nullptr);
}

// Every growth of a device arena is one cudaMalloc, and reserving within the capacity is none:
// what lets a step loop be checked for allocating nothing (the device's counter, not the arena's).
TEST(CudaMemory, CountsEveryCudaMallocOfTheArenas) {
  SFT_SKIP_WITHOUT_CUDA();
  const int64_t before = cuda::device_allocations();
  Arena a(Device::kCuda), b(cuda_allocator());
  a.reserve(4096);
  b.reserve(100);
  EXPECT_EQ(cuda::device_allocations(), before + 2);
  for (int i = 0; i < 10; ++i) {
    a.reserve(1000);
    b.reserve(64);
  }
  EXPECT_EQ(cuda::device_allocations(), before + 2);
  a.reserve(8192);
  EXPECT_EQ(cuda::device_allocations(), before + 3);
  Arena pinned(pinned_host_allocator());  // page-locked host memory is not device memory
  pinned.reserve(4096);
  EXPECT_EQ(cuda::device_allocations(), before + 3);
}

TEST(CudaMemory, ZeroAndCopiesMoveBytesOnTheDevice) {
  SFT_SKIP_WITHOUT_CUDA();
  Arena a(Device::kCuda), b(Device::kCuda);
  a.reserve(64);
  b.reserve(64);
  const std::vector<float> host = {1, 2, 3, 4};
  copy_bytes(a.data(), Device::kCuda, host.data(), Device::kCpu, 16);
  copy_bytes(b.data(), Device::kCuda, a.data(), Device::kCuda, 16);  // device to device
  a.zero(8);
  std::vector<float> back_a(4, -1), back_b(4, -1);
  copy_bytes(back_a.data(), Device::kCpu, a.data(), Device::kCuda, 16);
  copy_bytes(back_b.data(), Device::kCpu, b.data(), Device::kCuda, 16);
  EXPECT_EQ(back_a, (std::vector<float>{0, 0, 3, 4}));
  EXPECT_EQ(back_b, host);
  cuda_test::expect_error("past the capacity", [&] { a.zero(65); });
}

TEST(CudaMemory, CarveMeasuresThenHandsOutAlignedViews) {
  SFT_SKIP_WITHOUT_CUDA();
  Arena arena(Device::kCuda);
  float* a = nullptr;
  uint16_t* b = nullptr;
  carve(arena, [&](Carver& carver) {
    a = carver.take<float>(3);
    b = carver.take<uint16_t>(100);
  });
  EXPECT_EQ(arena.allocations(), 1);
  EXPECT_EQ(arena.capacity(), 64u + 256u);
  EXPECT_EQ(reinterpret_cast<std::byte*>(a), arena.data());
  EXPECT_EQ(reinterpret_cast<std::byte*>(b), arena.data() + 64);
}

TEST(CudaMemory, ViewsRoundTripThroughPinnedMemory) {
  SFT_SKIP_WITHOUT_CUDA();
  Arena pinned(pinned_host_allocator());
  EXPECT_EQ(pinned.device(), Device::kCpu);
  pinned.reserve(6 * sizeof(float));
  auto* host = reinterpret_cast<float*>(pinned.data());
  for (int i = 0; i < 6; ++i) host[i] = 0.5f * static_cast<float>(i) - 1;
  Arena arena(Device::kCuda);
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
