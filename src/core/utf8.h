// UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF) and encoding.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sft {

// Byte offset of the first invalid sequence, or nullopt when `text` is valid UTF-8.
std::optional<size_t> find_invalid_utf8(std::string_view text);

// Appends the UTF-8 encoding of code point `cp` (<= U+10FFFF; surrogates are encoded as is).
void append_utf8(std::string& out, char32_t cp);

}  // namespace sft
