// Arena and carve: aligned views, measured-then-carved layout, growth only when needed.
#include "core/arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "ops/backend.h"

namespace sft {
namespace {

TEST(Arena, CarvesAlignedViewsThatFitExactly) {
  Arena arena;
  float* a = nullptr;
  double* b = nullptr;
  uint16_t* c = nullptr;
  carve(arena, [&](Carver& cv) {
    a = cv.take<float>(3);
    b = cv.take<double>(5);
    c = cv.take<uint16_t>(1);
  });
  for (const void* p :
       {static_cast<const void*>(a), static_cast<const void*>(b), static_cast<const void*>(c)})
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kArenaAlignment, 0u);
  EXPECT_EQ(reinterpret_cast<std::byte*>(b) - reinterpret_cast<std::byte*>(a), 64);
  EXPECT_EQ(reinterpret_cast<std::byte*>(c) - reinterpret_cast<std::byte*>(b), 64);
  EXPECT_EQ(arena.capacity(), 3 * kArenaAlignment);
  EXPECT_EQ(a[0], 0.0f);  // zero-filled
}

TEST(Arena, GrowsOnlyForALargerLayout) {
  Arena arena;
  auto layout = [](int64_t n) { return [n](Carver& cv) { cv.take<float>(n); }; };
  carve(arena, layout(1000));
  carve(arena, layout(10));
  carve(arena, layout(1000));
  EXPECT_EQ(arena.allocations(), 1);
  carve(arena, layout(2000));
  EXPECT_EQ(arena.allocations(), 2);
}

TEST(Arena, ZeroAndCopyBytesOnTheCpu) {
  Arena arena;
  EXPECT_STREQ(arena.allocator().name, "cpu");
  arena.reserve(64);
  const float src[4] = {1, 2, 3, 4};
  copy_bytes(arena.data(), Device::kCpu, src, Device::kCpu, sizeof(src));
  arena.zero(4);
  const auto* f = reinterpret_cast<const float*>(arena.data());
  EXPECT_EQ(f[0], 0.0f);
  EXPECT_EQ(f[3], 4.0f);
  EXPECT_THROW(arena.zero(65), Error);
}

// A build without CUDA names the device's arena but refuses to allocate it, saying how to
// rebuild (a CUDA build's allocators are tested in tests/cuda/memory_test.cpp).
TEST(Arena, RefusesADeviceThisBuildHasNoAllocatorFor) {
  if (compiled_backends() != "cpu") GTEST_SKIP() << "this build has the CUDA allocator";
  for (const Allocator* allocator : {&cuda_allocator(), &pinned_host_allocator()}) {
    Arena arena(*allocator);
    try {
      arena.reserve(16);
      ADD_FAILURE() << allocator->name << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("rebuild with -DSFT_CUDA=ON"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(Arena(Device::kCuda).device(), Device::kCuda);
}

}  // namespace
}  // namespace sft
