// See pattern.h.
#include "text/pattern.h"

#include <stdexcept>

namespace sft::text {

Pattern::Pattern(const Json& spec, const LoadContext& ctx, const std::string& place) {
  if (!spec.is_object() || spec.size() != 1)
    ctx.fail(place, "expected {\"String\": ...} or {\"Regex\": ...}");
  auto it = spec.begin();
  if (!it.value().is_string()) ctx.fail(place + "." + it.key(), "expected a string");
  std::string value = it.value().get<std::string>();
  if (it.key() == "String") {
    literal_ = value;
  } else if (it.key() == "Regex") {
    try {
      regex_ = std::make_unique<Regex>(value);
    } catch (const std::invalid_argument& e) {
      ctx.fail(place + ".Regex", e.what(), "the pattern must be a valid Oniguruma/PCRE regex");
    }
  } else {
    ctx.fail(place, "unknown pattern kind '" + it.key() + "'", "use \"String\" or \"Regex\"");
  }
}

std::string Pattern::replace_all(std::string_view text, std::string_view content) const {
  std::string out;
  size_t last = 0;
  for_each_match(text, [&](size_t b, size_t e) {
    out.append(text.substr(last, b - last));
    out.append(content);
    last = e;
  });
  if (last == 0 && out.empty()) return std::string(text);
  out.append(text.substr(last));
  return out;
}

}  // namespace sft::text
