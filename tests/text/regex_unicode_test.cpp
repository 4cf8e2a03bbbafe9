// Regexes classify characters by HF's Unicode tables (unicode_categories.h), not PCRE2's
// older ones: characters assigned since Unicode 14 match \p{S}, \p{L}, ... as in HF, offsets
// refer to the caller's text, and a pattern's explicit characters keep their meaning.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/utf8.h"
#include "text/regex.h"
#include "text/regex_subject.h"
#include "text/unicode_categories.h"

namespace sft::text {
namespace {

std::string utf8(std::u32string_view s) {
  std::string out;
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

std::vector<std::pair<size_t, size_t>> matches(const Regex& re, const std::string& text) {
  std::vector<std::pair<size_t, size_t>> out;
  re.for_each_match(text, [&](size_t b, size_t e) { out.push_back({b, e}); });
  return out;
}

using M = std::vector<std::pair<size_t, size_t>>;

TEST(HfCategories, NewerThanPcre2) {
  EXPECT_STREQ(kHfUnicodeVersion, "16.0.0");
  EXPECT_EQ(hf_category(U'A'), GeneralCategory::kLu);
  EXPECT_EQ(hf_category(0x4E00), GeneralCategory::kLo);
  EXPECT_EQ(hf_category(0x1FAAF), GeneralCategory::kSo);  // Unicode 15.0 emoji
  EXPECT_EQ(hf_category(0x2EBF0), GeneralCategory::kLo);  // Unicode 15.1 CJK Extension I
  EXPECT_EQ(hf_category(0x1CC00), GeneralCategory::kSo);  // Unicode 16.0
  EXPECT_EQ(hf_category(0x10FFFF), GeneralCategory::kCn);
  EXPECT_EQ(hf_category(0xE000), GeneralCategory::kCo);
  EXPECT_STREQ(kCategoryNames[size_t(GeneralCategory::kPo)], "Po");
}

TEST(RegexUnicode, NewCharactersMatchTheirHfCategory) {
  EXPECT_EQ(matches(Regex("\\p{S}"), utf8(U"a\U0001FAAFb")), (M{{1, 5}}));
  EXPECT_EQ(matches(Regex("\\p{So}+"), utf8(U"\U0001CC00\U0001FAAF")), (M{{0, 8}}));
  EXPECT_EQ(matches(Regex("\\p{L}+"), utf8(U"x\U0002EBF0y z")), (M{{0, 6}, {7, 8}}));
  EXPECT_EQ(matches(Regex("[^\\s\\p{L}\\p{N}]+"), utf8(U"\U0001FAAF a")), (M{{0, 4}}));
  EXPECT_TRUE(matches(Regex("\\p{Cn}"), utf8(U"\U0001FAAF\U0002EBF0")).empty());
  // An unassigned code point stays unassigned.
  EXPECT_EQ(matches(Regex("\\p{Cn}"), utf8(U"a\U0010FFFD\U000E0080")), (M{{5, 9}}));
}

TEST(RegexUnicode, LlamaPatternOnNewCharacters) {
  Regex re(
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
  // "ab" + CJK Ext I letter + "1" + emoji: the new letter joins the word, the emoji stands alone.
  std::string text = utf8(
      U"ab\U0002EBF0"
      U"1 \U0001FAAF");
  EXPECT_EQ(matches(re, text), (M{{0, 6}, {6, 7}, {7, 12}}));
}

TEST(RegexUnicode, ExplicitCharactersKeepTheirMeaning) {
  // U+1FAAF named in a range: still in the range (left as it is), and stand-ins for other
  // new symbols are chosen outside it.
  Regex re("[\\x{1F000}-\\x{1FFFF}]+");
  EXPECT_EQ(matches(re, utf8(U"a\U0001FAAF\U0001F600b")), (M{{1, 9}}));
  EXPECT_EQ(matches(Regex("\U0001FAAF"), utf8(U"x\U0001FAAF")), (M{{1, 5}}));
  SubjectRewriter sub("[\\x{1F000}-\\x{1FFFF}]|\\p{S}");
  char32_t s = sub.stand_in(0x1CC00);
  EXPECT_TRUE(s < 0x1F000 || s > 0x1FFFF) << std::hex << unsigned(s);
  EXPECT_EQ(sub.stand_in(0x1FAAF), char32_t(0x1FAAF));
  EXPECT_EQ(sub.stand_in(U'a'), char32_t(U'a'));
}

TEST(RegexUnicode, StandInsShareCategoryAndLength) {
  SubjectRewriter sub("\\p{L}");
  ASSERT_FALSE(pcre2_category_gaps().empty()) << "PCRE2 as new as HF: nothing to rewrite";
  size_t n = 0;
  for (const auto& [first, last] : pcre2_category_gaps())
    for (char32_t c = first; c <= last; ++c, ++n) {
      char32_t s = sub.stand_in(c);
      std::string a, b;
      append_utf8(a, c);
      append_utf8(b, s);
      ASSERT_EQ(a.size(), b.size()) << std::hex << unsigned(c);
      ASSERT_EQ(hf_category(s), hf_category(c)) << std::hex << unsigned(c);
    }
  EXPECT_GT(n, 0u);
}

}  // namespace
}  // namespace sft::text
