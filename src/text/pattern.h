// The `pattern` field of Replace / Split components: {"String": "..."} (a literal) or
// {"Regex": "..."}. Matches are non-empty and non-overlapping, left to right.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "io/json.h"
#include "text/load_context.h"
#include "text/regex.h"

namespace sft::text {

class Pattern {
 public:
  Pattern(const Json& spec, const LoadContext& ctx, const std::string& place);

  template <typename F>
  void for_each_match(std::string_view text, F&& on_match) const {
    if (regex_) {
      regex_->for_each_match(text, on_match);
      return;
    }
    if (literal_.empty()) return;
    size_t pos = 0;
    while ((pos = text.find(literal_, pos)) != std::string_view::npos) {
      on_match(pos, pos + literal_.size());
      pos += literal_.size();
    }
  }

  // Every match replaced by `content`.
  std::string replace_all(std::string_view text, std::string_view content) const;

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
};

}  // namespace sft::text
