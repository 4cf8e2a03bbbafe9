// General categories of code points as HF `tokenizers` sees them in its regexes (\p{L}, \p{N},
// ...): a table measured from HF's own regex engine by tools/make_unicode_tables.py
// (unicode_categories.cpp, generated). HF knows a newer Unicode than the PCRE2 we match with,
// and regex_subject.h uses this table to make PCRE2 classify text the way HF does.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sft::text {

// In the order of PCRE2's and Oniguruma's two-letter names (kCategoryNames).
enum class GeneralCategory : uint8_t {
  kCn,
  kLu,
  kLl,
  kLt,
  kLm,
  kLo,
  kMn,
  kMc,
  kMe,
  kNd,
  kNl,
  kNo,
  kPc,
  kPd,
  kPs,
  kPe,
  kPi,
  kPf,
  kPo,
  kSm,
  kSc,
  kSk,
  kSo,
  kZs,
  kZl,
  kZp,
  kCc,
  kCf,
  kCs,
  kCo,
};
constexpr size_t kCategoryCount = 30;
// "Cn", "Lu", ... indexed by GeneralCategory.
extern const char* const kCategoryNames[kCategoryCount];

// One run of the table: code points from `first` up to the next run's first share `category`
// (a GeneralCategory).
struct CategoryRun {
  char32_t first;
  uint8_t category;
};
extern const CategoryRun kHfCategoryRuns[];
extern const size_t kHfCategoryRunCount;
// The Unicode version of the table, e.g. "16.0.0".
extern const char* const kHfUnicodeVersion;

// HF's general category of `c` (c <= U+10FFFF).
GeneralCategory hf_category(char32_t c);

}  // namespace sft::text
