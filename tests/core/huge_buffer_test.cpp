// core/huge_buffer.h: the kept scratch buffer is 2 MiB aligned, zero where new, kept while it is
// large enough and grown (new zero memory) when asked for more; advise_huge_pages leaves the
// contents alone.
#include "core/huge_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sft {
namespace {

constexpr size_t kHuge = size_t{2} << 20;

TEST(HugeBuffer, IsAlignedZeroKeptAndGrown) {
  HugeBuffer b;
  EXPECT_EQ(b.capacity(), 0u);
  const std::span<float> small = b.as<float>(1000);
  ASSERT_EQ(small.size(), 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data()) % kHuge, 0u);
  EXPECT_EQ(b.capacity(), kHuge);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](float v) { return v == 0.0f; }));
  std::fill(small.begin(), small.end(), 3.0f);
  // Still large enough: the same memory, contents kept.
  const std::span<float> again = b.as<float>(kHuge / sizeof(float));
  EXPECT_EQ(again.data(), small.data());
  EXPECT_EQ(again[999], 3.0f);
  // Larger: new memory (whole huge pages), zero.
  const std::span<float> big = b.as<float>(kHuge / sizeof(float) + 1);
  EXPECT_EQ(b.capacity(), 2 * kHuge);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % kHuge, 0u);
  EXPECT_TRUE(std::all_of(big.begin(), big.end(), [](float v) { return v == 0.0f; }));
  big.back() = 1.0f;  // writable to the end
  EXPECT_EQ(b.reserve(0), reinterpret_cast<std::byte*>(big.data()));
}

TEST(HugeBuffer, AdvisingARangeKeepsItsContents) {
  std::vector<float> v(3 * kHuge / sizeof(float) + 17);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 251);
  advise_huge_pages(v.data() + 5, (v.size() - 5) * sizeof(float));
  advise_huge_pages(v.data(), 10);  // no whole huge page inside: nothing to advise
  size_t bad = 0;
  for (size_t i = 0; i < v.size(); ++i) bad += v[i] != float(i % 251);
  EXPECT_EQ(bad, 0u);
}

}  // namespace
}  // namespace sft
