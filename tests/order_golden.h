// Comparing a row order against a golden written by tools/make_sampler_goldens.py: short orders
// are stored whole ({"length", "values"}), long ones as {"length", "head", "tail", "fnv1a64"}
// (FNV-1a 64 over the little-endian bytes of every index), so the fixture stays small.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "io/json.h"

namespace sft::test {

inline std::string fnv1a64(const std::vector<uint64_t>& values) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t v : values)
    for (int b = 0; b < 8; ++b) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 0x100000001b3ull;
    }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

inline void expect_order(const Json& want, const std::vector<uint64_t>& got,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.at("length").get<uint64_t>()) << what;
  if (want.contains("values")) {
    EXPECT_EQ(got, want.at("values").get<std::vector<uint64_t>>()) << what;
    return;
  }
  const auto head = want.at("head").get<std::vector<uint64_t>>();
  const auto tail = want.at("tail").get<std::vector<uint64_t>>();
  EXPECT_TRUE(std::equal(head.begin(), head.end(), got.begin())) << what;
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), got.end() - tail.size())) << what;
  EXPECT_EQ(fnv1a64(got), want.at("fnv1a64").get<std::string>()) << what;
}

}  // namespace sft::test
