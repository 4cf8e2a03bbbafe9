// Regexes as tokenizer.json files write them (Oniguruma syntax in HF `tokenizers`), run with
// PCRE2 in UTF + UCP mode with the JIT. Patterns are translated where the two engines
// disagree: `\s` becomes Oniguruma's White_Space set (PCRE2's also holds U+180E). HF's
// newer Unicode tables are honoured by rewriting the subject (regex_subject.h).
//
// A Regex is immutable after construction and safe to use from many threads (each thread
// keeps its own match data and JIT stack).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "text/regex_subject.h"

namespace sft::text {

class Regex {
 public:
  // Throws std::invalid_argument with PCRE2's message and offset when `pattern` is invalid.
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  const std::string& pattern() const { return pattern_; }

  // Calls on_match(begin, end) for each successive non-empty, non-overlapping match in
  // `text` (valid UTF-8), left to right.
  template <typename F>
  void for_each_match(std::string_view text, F&& on_match) const {
    std::string rewritten;  // only filled for text PCRE2 would classify unlike HF
    std::string_view subject = subject_.rewrite(text, rewritten);
    size_t pos = 0, begin, end;
    while (next_match(subject, pos, &begin, &end)) {
      on_match(begin, end);
      pos = end;
    }
  }

 private:
  Regex(std::string_view pattern, const std::string& translated);
  // The first non-empty match at or after byte `pos` of the rewritten subject; false when
  // there is none.
  bool next_match(std::string_view subject, size_t pos, size_t* begin, size_t* end) const;

  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8
  SubjectRewriter subject_;
};

// Oniguruma → PCRE2 pattern translation (exposed for tests).
std::string translate_oniguruma_pattern(std::string_view pattern);

}  // namespace sft::text
