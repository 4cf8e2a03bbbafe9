// Unicode helpers for the tokenizer pipeline: UTF-8 stepping, the character classes HF
// `tokenizers` uses through Rust's `char` methods (is_whitespace, is_numeric,
// is_alphanumeric, punctuation), normalization forms via utf8proc, the GPT-2 byte-level
// alphabet, and Rust's lossy UTF-8 decoding (one U+FFFD per maximal invalid subpart).
//
// All functions take valid UTF-8 unless stated otherwise; the facade validates input once.
#pragma once

#include "core/utf8.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sft::text {

// Length in bytes of the UTF-8 sequence starting with lead byte `b` (1 for stray bytes).
inline size_t utf8_len(unsigned char b) {
  return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

// Decodes the code point at s[i] (valid UTF-8); `len` receives its byte length.
char32_t utf8_decode(std::string_view s, size_t i, size_t* len);

// Rust char::is_whitespace (the White_Space property).
bool is_whitespace(char32_t c);
// Rust char::is_numeric (general categories Nd, Nl, No).
bool is_numeric(char32_t c);
// Rust char::is_alphanumeric, approximated by the letter/mark/number categories.
bool is_alphanumeric(char32_t c);
// HF's punctuation test: ASCII punctuation or a Unicode P* category.
bool is_punctuation(char32_t c);
// Regex \w as Oniguruma sees it: letters, marks, decimal digits, connector punctuation,
// Join_Control (ZWJ/ZWNJ).
bool is_word_char(char32_t c);

enum class NormalForm { kNFC, kNFD, kNFKC, kNFKD };
// Normalizes `s` (valid UTF-8); ASCII input returns unchanged without allocation.
void normalize_unicode(std::string& s, NormalForm form);
// Full lowercase mapping (as Rust's str::to_lowercase for the common cases).
std::string to_lower(std::string_view s);

// GPT-2's byte → printable character table, as UTF-8 strings, and its inverse.
const std::array<std::string, 256>& byte_level_alphabet();
// The byte that character `c` stands for, or -1 when `c` is not in the alphabet.
int byte_level_byte(char32_t c);

// String::from_utf8_lossy: invalid sequences become U+FFFD, one per maximal subpart.
std::string utf8_lossy(std::string_view bytes);

}  // namespace sft::text
