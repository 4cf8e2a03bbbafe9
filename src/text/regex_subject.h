// Makes PCRE2 classify characters the way HF `tokenizers` does. PCRE2 (Debian 12: 10.42) has
// Unicode 14 tables, HF has newer ones (unicode_categories.h): a character assigned since (an
// emoji like U+1FAAF, CJK Extension I) is unassigned (Cn) to PCRE2 but a symbol or letter to
// HF, so \p{S}, \p{L}, [^\s\p{L}\p{N}] ... split text differently.
//
// Spelling \p{L} etc. out as explicit range lists would be exact, but PCRE2 scans such lists
// linearly and runs ~20x slower on CJK text. Instead the *subject* is rewritten: each code
// point PCRE2 classifies differently from HF is replaced by a stand-in of the same UTF-8
// length that PCRE2 puts in HF's category. Byte offsets do not change, so the matches PCRE2
// finds on the rewritten text are the ones HF finds on the original; text without such code
// points (nearly all text) is matched as it is, after one scan of its lead bytes.
//
// Exact when the pattern looks at characters through general categories (\p{L}, \p{Nd}, \w,
// \d, \s, `.`, classes and negations of these) or through explicit characters and ranges:
// stand-ins are chosen outside the pattern's explicit characters (and their case partners),
// and a code point the pattern names explicitly is left as it is (PCRE2's view of it then).
// Script properties (\p{Han}) and \X still follow PCRE2's own tables.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/unicode_categories.h"

namespace sft::text {

class SubjectRewriter {
 public:
  // `pattern`: the PCRE2 pattern (after translation), scanned for its explicit characters.
  explicit SubjectRewriter(std::string_view pattern);

  // `text` itself when no code point needs replacing, else `storage` holding the rewritten
  // text (same length, same byte offsets).
  std::string_view rewrite(std::string_view text, std::string& storage) const;

  // The stand-in PCRE2 sees for `c` (c itself when PCRE2 and HF agree on it).
  char32_t stand_in(char32_t c) const;

 private:
  // Explicit characters and class ranges of the pattern, as inclusive [first, last] ranges.
  std::vector<std::pair<char32_t, char32_t>> explicit_;
  // [category][UTF-8 length - 1]: a code point PCRE2 puts in that category, or 0 for none.
  std::array<std::array<char32_t, 4>, kCategoryCount> stand_ins_{};
  bool named(char32_t c) const;
};

// The code points where PCRE2's general category differs from HF's (all of them assigned
// since PCRE2's Unicode version), found once per process by asking PCRE2 about every code
// point HF assigns. Sorted, inclusive ranges.
const std::vector<std::pair<char32_t, char32_t>>& pcre2_category_gaps();

}  // namespace sft::text
