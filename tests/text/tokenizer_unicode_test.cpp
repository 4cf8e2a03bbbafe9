// Parity with HF `tokenizers` on every assigned code point of HF's Unicode (16.0): for each
// code point c of tests/fixtures/tokenizers/unicode/codepoints.txt the strings c, "a" c "1"
// and c " " c go through every real tokenizer in ../shared, and the ids must be the ones
// tools/make_unicode_goldens.py recorded (one FNV-1a digest per group of 32 code points).
// This is where PCRE2's older Unicode tables would show: U+1FAAF is a symbol to HF.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/utf8.h"
#include "io/json.h"
#include "test_paths.h"
#include "text/tokenizer.h"

namespace sft::text {
namespace {

constexpr size_t kGroup = 32;  // code points per digest, as in tools/make_unicode_goldens.py

const std::string kDir = "tests/fixtures/tokenizers/unicode/";

std::vector<char32_t> corpus_code_points() {
  std::ifstream in(test::source_path(kDir + "codepoints.txt"));
  std::vector<char32_t> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    unsigned first = 0, last = 0;
    if (std::sscanf(line.c_str(), "%x %x", &first, &last) != 2) continue;
    for (unsigned c = first; c <= last; ++c) out.push_back(c);
  }
  return out;
}

std::vector<std::string> strings_of(char32_t c) {
  std::string ch;
  append_utf8(ch, c);
  return {ch, "a" + ch + "1", ch + " " + ch};
}

// Sanitizer builds run several times slower and are there for memory errors: they check
// every 7th group (all of them in the Release pass).
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kGroupStride = 7;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr size_t kGroupStride = 7;
#else
constexpr size_t kGroupStride = 1;
#endif
#else
constexpr size_t kGroupStride = 1;
#endif

class UnicodeParity : public ::testing::TestWithParam<const char*> {};

TEST_P(UnicodeParity, EveryCodePointMatchesHfTokenizers) {
  std::string name = GetParam();
  const auto file = test::require_shared_asset("tokenizers/" + name + "/tokenizer.json");
  if (!file) return;
  static const std::vector<char32_t> cps = corpus_code_points();
  ASSERT_GT(cps.size(), 150000u);
  std::ifstream in(test::source_path(kDir + name + ".hash"));
  std::vector<std::string> hashes;
  for (std::string line; std::getline(in, line);) hashes.push_back(line);
  size_t groups = (cps.size() + kGroup - 1) / kGroup;
  ASSERT_EQ(hashes.size(), groups) << "regenerate with tools/make_unicode_goldens.py";

  Tokenizer tok = Tokenizer::from_file(*file);
  size_t mismatches = 0, checked = 0;
  for (size_t g = 0; g < groups; g += kGroupStride, ++checked) {
    uint64_t h = 0xCBF29CE484222325ull;
    auto byte = [&](uint8_t b) { h = (h ^ b) * 0x100000001B3ull; };
    size_t end = std::min(cps.size(), (g + 1) * kGroup);
    for (size_t i = g * kGroup; i < end; ++i)
      for (const auto& s : strings_of(cps[i])) {
        for (int32_t id : tok.encode(s, false))
          for (int k = 0; k < 4; ++k) byte(uint8_t(uint32_t(id) >> (8 * k)));
        for (int k = 0; k < 4; ++k) byte(0xFF);
      }
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    if (hashes[g] == hex) continue;
    if (++mismatches > 5) continue;
    char range[40];
    std::snprintf(range, sizeof range, "U+%04X..U+%04X", unsigned(cps[g * kGroup]),
                  unsigned(cps[end - 1]));
    ADD_FAILURE() << name << ": group " << g << " (" << range
                  << ") differs from HF; see HF's ids with tools/make_unicode_goldens.py "
                  << std::hex << unsigned(cps[g * kGroup]);
  }
  EXPECT_EQ(mismatches, 0u) << name << ": " << mismatches << " of " << checked << " groups of "
                            << kGroup << " code points differ from HF tokenizers";
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, UnicodeParity,
                         ::testing::Values("qwen3", "llama3_1", "llama2", "gemma3", "deepseek_v3"));

}  // namespace
}  // namespace sft::text
