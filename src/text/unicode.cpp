// See unicode.h. Character properties come from utf8proc's category tables; hf_category
// (unicode_categories.h) from the table generated out of HF's regex engine.
#include "text/unicode.h"

#include "text/unicode_categories.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <memory>

namespace sft::text {

char32_t utf8_decode(std::string_view s, size_t i, size_t* len) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  unsigned char b = p[0];
  if (b < 0x80) {
    *len = 1;
    return b;
  }
  if (b < 0xE0) {
    *len = 2;
    return (char32_t(b & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if (b < 0xF0) {
    *len = 3;
    return (char32_t(b & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  *len = 4;
  return (char32_t(b & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) | (char32_t(p[2] & 0x3F) << 6) |
         (p[3] & 0x3F);
}

bool is_whitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

namespace {
utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}
}  // namespace

bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  auto k = category(c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

bool is_alphanumeric(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? true : (c >= '0' && c <= '9');
  auto k = category(c);
  return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
         (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
}

namespace {
// HF's Punctuation pre-tokenizer uses an older Unicode table than ours: these P* characters
// (assigned or recategorized since) are not punctuation there, and U+166D, U+111C9 still are.
// Measured by probing tokenizers 0.23.3 with every code point below U+30000.
constexpr char32_t kNotHfPunctuation[] = {
    0x61D,   0x9FD,   0xA76,   0xC77,   0xC84,   0x1B7D,  0x1B7E,  0x2E43,  0x2E44,  0x2E45,
    0x2E46,  0x2E47,  0x2E48,  0x2E49,  0x2E4A,  0x2E4B,  0x2E4C,  0x2E4D,  0x2E4E,  0x2E4F,
    0x2E52,  0x2E53,  0x2E54,  0x2E55,  0x2E56,  0x2E57,  0x2E58,  0x2E59,  0x2E5A,  0x2E5B,
    0x2E5C,  0x2E5D,  0x10EAD, 0x10F55, 0x10F56, 0x10F57, 0x10F58, 0x10F59, 0x10F86, 0x10F87,
    0x10F88, 0x10F89, 0x1144B, 0x1144C, 0x1144D, 0x1144E, 0x1144F, 0x1145A, 0x1145B, 0x1145D,
    0x11660, 0x11661, 0x11662, 0x11663, 0x11664, 0x11665, 0x11666, 0x11667, 0x11668, 0x11669,
    0x1166A, 0x1166B, 0x1166C, 0x116B9, 0x1183B, 0x11944, 0x11945, 0x11946, 0x119E2, 0x11A3F,
    0x11A40, 0x11A41, 0x11A42, 0x11A43, 0x11A44, 0x11A45, 0x11A46, 0x11A9A, 0x11A9B, 0x11A9C,
    0x11A9E, 0x11A9F, 0x11AA0, 0x11AA1, 0x11AA2, 0x11C41, 0x11C42, 0x11C43, 0x11C44, 0x11C45,
    0x11C70, 0x11C71, 0x11EF7, 0x11EF8, 0x11FFF, 0x12FF1, 0x12FF2, 0x16E97, 0x16E98, 0x16E99,
    0x16E9A, 0x16FE2, 0x1E95E, 0x1E95F};
}  // namespace

bool is_punctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  if (c == 0x166D || c == 0x111C9) return true;
  if (std::binary_search(std::begin(kNotHfPunctuation), std::end(kNotHfPunctuation), c))
    return false;
  auto k = category(c);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

bool is_word_char(char32_t c) {
  if (c < 0x80)
    return c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9');
  if (c == 0x200C || c == 0x200D) return true;  // Join_Control is part of Unicode \w
  auto k = category(c);
  return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_ME) || k == UTF8PROC_CATEGORY_ND ||
         k == UTF8PROC_CATEGORY_PC;
}

namespace {
// True when every character is left alone by all four normalization forms: no
// decomposition, combining class 0, never the second half of a composition, and not Hangul
// (composed algorithmically). Most text (ASCII, CJK, emoji) passes, and skipping utf8proc's
// allocation for it is most of the encode-time cost of NFC.
bool normalization_inert(std::string_view s) {
  size_t n;
  for (size_t i = 0; i < s.size(); i += n) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      n = 1;
      continue;
    }
    char32_t c = utf8_decode(s, i, &n);
    if ((c >= 0x1100 && c <= 0x11FF) || (c >= 0xAC00 && c <= 0xD7A3)) return false;
    const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(c));
    if (p->combining_class != 0 || p->decomp_seqindex != UINT16_MAX) return false;
    if (p->comb_index != UINT16_MAX && (p->comb_index & 0x8000)) return false;
  }
  return true;
}
}  // namespace

void normalize_unicode(std::string& s, NormalForm form) {
  if (normalization_inert(s)) return;
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNFC:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::kNFD:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::kNFKC:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::kNFKD:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* out = nullptr;
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                        static_cast<utf8proc_ssize_t>(s.size()), &out,
                        static_cast<utf8proc_option_t>(options));
  if (n < 0) return;  // cannot happen for valid UTF-8; leave the text as it was
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> guard(out, &std::free);
  s.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}

std::string to_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n;
    char32_t c = utf8_decode(s, i, &n);
    i += n;
    if (c == 0x130) {  // İ lowercases to i + combining dot above (the one multi-char case)
      out += "i\xCC\x87";
      continue;
    }
    append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
  }
  return out;
}

namespace {
struct ByteTables {
  std::array<std::string, 256> alphabet;
  std::array<int16_t, 324> inverse;  // every alphabet character is below U+0144
  ByteTables() {
    inverse.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      char32_t c = printable ? char32_t(b) : char32_t(256 + extra++);
      append_utf8(alphabet[b], c);
      inverse[c] = static_cast<int16_t>(b);
    }
  }
};
const ByteTables& byte_tables() {
  static const ByteTables tables;
  return tables;
}
}  // namespace

const std::array<std::string, 256>& byte_level_alphabet() {
  return byte_tables().alphabet;
}

int byte_level_byte(char32_t c) {
  return c < 324 ? byte_tables().inverse[c] : -1;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size(), i = 0;
  while (i < n) {
    unsigned char b = p[i];
    if (b < 0x80) {
      out += char(b);
      ++i;
      continue;
    }
    // Expected length and the allowed range of the second byte (RFC 3629 table).
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF)
      need = 2;
    else if (b == 0xE0)
      need = 3, lo = 0xA0;
    else if (b >= 0xE1 && b <= 0xEC)
      need = 3;
    else if (b == 0xED)
      need = 3, hi = 0x9F;
    else if (b >= 0xEE && b <= 0xEF)
      need = 3;
    else if (b == 0xF0)
      need = 4, lo = 0x90;
    else if (b >= 0xF1 && b <= 0xF3)
      need = 4;
    else if (b == 0xF4)
      need = 4, hi = 0x8F;
    if (need == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    size_t k = 1;
    while (k < need && i + k < n) {
      unsigned char c = p[i + k];
      bool ok = k == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
      if (!ok) break;
      ++k;
    }
    if (k == need)
      out.append(bytes.substr(i, need));
    else
      out += "\xEF\xBF\xBD";
    i += k;
  }
  return out;
}

GeneralCategory hf_category(char32_t c) {
  const CategoryRun* end = kHfCategoryRuns + kHfCategoryRunCount;
  const CategoryRun* run = std::upper_bound(
      kHfCategoryRuns, end, c, [](char32_t x, const CategoryRun& r) { return x < r.first; });
  return static_cast<GeneralCategory>(std::prev(run)->category);
}

}  // namespace sft::text
