// torch's CPU generator and randperm against torch 2.15 itself
// (tests/fixtures/sampler/generator.json, tools/make_sampler_goldens.py).
#include "core/torch_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "io/json.h"
#include "order_golden.h"
#include "test_paths.h"

namespace sft {
namespace {

const Json& goldens() {
  static const Json g =
      read_json_file(test::source_path("tests/fixtures/sampler/generator.json"), "test");
  return g;
}

using test::expect_order;

TEST(TorchGenerator, RawDrawsMatchTorch) {
  for (const Json& s : goldens().at("streams")) {
    const uint64_t seed = s.at("seed").get<uint64_t>();
    TorchGenerator g32(seed);
    for (const Json& v : s.at("random_mod_2p31"))
      EXPECT_EQ(g32.random() % (1ull << 31), v.get<uint64_t>()) << "seed " << seed;
    TorchGenerator g64(seed);
    for (const Json& v : s.at("random64_mod_2p62"))
      EXPECT_EQ(g64.random64() % (1ull << 62), v.get<uint64_t>()) << "seed " << seed;
  }
}

TEST(TorchGenerator, RandpermMatchesTorch) {
  EXPECT_EQ(goldens().at("large_threshold").get<uint64_t>(), kTorchRandpermInsideOutFrom);
  size_t cases = 0;
  for (const Json& c : goldens().at("randperm")) {
    const uint64_t n = c.at("n").get<uint64_t>(), seed = c.at("seed").get<uint64_t>();
    TorchGenerator g(seed);
    expect_order(c, torch_randperm(n, g),
                 "randperm(" + std::to_string(n) + ") seed " + std::to_string(seed));
    ++cases;
  }
  EXPECT_GE(cases, 30u);
}

TEST(TorchGenerator, SecondRandpermContinuesTheStream) {
  const Json& c = goldens().at("randperm_twice");
  TorchGenerator g(c.at("seed").get<uint64_t>());
  const uint64_t n = c.at("n").get<uint64_t>();
  EXPECT_EQ(torch_randperm(n, g), c.at("first").get<std::vector<uint64_t>>());
  EXPECT_EQ(torch_randperm(n, g), c.at("second").get<std::vector<uint64_t>>());
}

TEST(TorchGenerator, OnlyTheLow32BitsOfTheSeedCount) {
  TorchGenerator a(42), b(42 + (1ull << 32)), c(43);
  const uint32_t x = a.random();
  EXPECT_EQ(x, b.random());
  EXPECT_NE(x, c.random());
}

// The inside-out path (n >= 214748364, 1.7 GB): only with SFT_SAMPLER_LARGE=1.
TEST(TorchGenerator, LargeRandpermMatchesTorch) {
  const char* on = std::getenv("SFT_SAMPLER_LARGE");
  if (!on || std::string(on) != "1") GTEST_SKIP() << "set SFT_SAMPLER_LARGE=1 (1.7 GB, seconds)";
  ASSERT_TRUE(goldens().contains("large_randperm"));
  const Json& c = goldens().at("large_randperm");
  const uint64_t n = c.at("n").get<uint64_t>();
  ASSERT_EQ(n, kTorchRandpermInsideOutFrom);
  TorchGenerator g(c.at("seed").get<uint64_t>());
  const std::vector<uint64_t> p = torch_randperm(n, g);
  const auto head = c.at("head").get<std::vector<uint64_t>>();
  const auto tail = c.at("tail").get<std::vector<uint64_t>>();
  EXPECT_TRUE(std::equal(head.begin(), head.end(), p.begin()));
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), p.end() - tail.size()));
  uint64_t weighted = 0;  // sum of (i + 1) * p[i] modulo 2^64, as the golden script
  for (uint64_t i = 0; i < n; ++i) weighted += (i + 1) * p[i];
  EXPECT_EQ(weighted, c.at("weighted_sum_mod_2p64").get<uint64_t>());
}

}  // namespace
}  // namespace sft
