// Arena and carve: aligned views, measured-then-carved layout, growth only when needed.
#include "core/arena.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "core/error.h"

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

TEST(Arena, RefusesADeviceThisBuildHasNoAllocatorFor) {
  Arena arena(Device::kCuda);
  EXPECT_THROW(arena.reserve(16), Error);
}

}  // namespace
}  // namespace sft
