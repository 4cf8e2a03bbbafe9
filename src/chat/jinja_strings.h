// Python str semantics on UTF-8 strings, for the filters and methods templates call:
// strip with Python's notion of whitespace, split with and without a separator, case
// mapping by code point (utf8proc), find/count/replace in code-point units.
#pragma once

#include "core/utf8.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sft::jinja::pystr {

enum class Side { kBoth, kLeft, kRight };

// str.strip / lstrip / rstrip; chars = nullopt strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, Side side);
// str.split(sep=None, maxsplit=-1) and str.rsplit.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);       // str.title()
std::string capitalize(std::string_view s);  // str.capitalize()
// str.replace(old, new, count=-1).
std::string replace(std::string_view s, std::string_view old, std::string_view repl, int64_t count);
// str.find / rfind / count in code points (-1 when absent).
int64_t find(std::string_view s, std::string_view sub, bool reverse);
int64_t count(std::string_view s, std::string_view sub);
bool is_space(uint32_t cp);
// Code points of s (decoding valid UTF-8).
std::vector<uint32_t> code_points(std::string_view s);
using ::sft::append_utf8;  // core/utf8.h

}  // namespace sft::jinja::pystr
