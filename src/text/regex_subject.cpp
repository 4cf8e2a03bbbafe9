// See regex_subject.h. The gaps are measured once per process: one anchored \p{Xx} match per
// code point HF assigns (~155k, a few milliseconds with the JIT), so they are right for
// whichever PCRE2 the build links, older or newer than Debian 12's.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/regex_subject.h"

#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "core/utf8.h"
#include "text/unicode.h"

namespace sft::text {

namespace {

using Ranges = std::vector<std::pair<char32_t, char32_t>>;

// Appends [c, c] to sorted `out`, extending the last range when contiguous.
void add_point(Ranges& out, char32_t c) {
  if (!out.empty() && out.back().second + 1 == c)
    out.back().second = c;
  else
    out.push_back({c, c});
}

bool in_ranges(const Ranges& r, char32_t c) {
  auto it = std::upper_bound(
      r.begin(), r.end(), c,
      [](char32_t x, const std::pair<char32_t, char32_t>& e) { return x < e.first; });
  return it != r.begin() && std::prev(it)->second >= c;
}

size_t utf8_length(char32_t c) {
  return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

// "14.0.0" → 140000, for ordering Unicode versions.
int version_number(const char* v) {
  int major = 0, minor = 0, update = 0;
  std::sscanf(v, "%d.%d.%d", &major, &minor, &update);
  return major * 10000 + minor * 100 + update;
}

// Asks PCRE2 whether single code points are in a general category.
class CategoryProbe {
 public:
  CategoryProbe() {
    for (size_t k = 0; k < kCategoryCount; ++k) {
      std::string pattern = std::string("\\p{") + kCategoryNames[k] + "}";
      int error = 0;
      PCRE2_SIZE offset = 0;
      codes_[k] = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &error, &offset, nullptr);
      if (!codes_[k]) fail("tokenizer", "PCRE2 does not know " + pattern);
      pcre2_jit_compile(codes_[k], PCRE2_JIT_COMPLETE);
    }
    data_ = pcre2_match_data_create(1, nullptr);
  }
  ~CategoryProbe() {
    pcre2_match_data_free(data_);
    for (auto* code : codes_) pcre2_code_free(code);
  }
  CategoryProbe(const CategoryProbe&) = delete;
  CategoryProbe& operator=(const CategoryProbe&) = delete;

  bool is(char32_t c, size_t category) {
    buf_.clear();
    append_utf8(buf_, c);
    return pcre2_match(codes_[category], reinterpret_cast<PCRE2_SPTR>(buf_.data()), buf_.size(), 0,
                       PCRE2_NO_UTF_CHECK, data_, nullptr) > 0;
  }

 private:
  std::array<pcre2_code*, kCategoryCount> codes_{};
  pcre2_match_data* data_ = nullptr;
  std::string buf_;
};

struct Gaps {
  Ranges ranges;
  // One bit per 256-code-point block that holds a gap: most characters are cleared by it.
  std::array<uint64_t, 0x110000 / 256 / 64> blocks{};
  char32_t min = 0x110000;
  // Per UTF-8 lead byte: whether some character starting with it is in a gap block.
  std::array<bool, 256> lead_has_gap{};

  bool block_has_gap(unsigned block) const { return (blocks[block >> 6] >> (block & 63)) & 1; }
  bool contains(char32_t c) const {
    if (c < min || !block_has_gap(c >> 8)) return false;
    return in_ranges(ranges, c);
  }
};

Gaps measure_gaps() {
  Gaps g;
  CategoryProbe probe;
  char pcre2_version[32] = {};
  pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, pcre2_version);
  // Code points HF leaves unassigned are only asked about when PCRE2's Unicode is newer
  // (then it may assign some); surrogates cannot occur in UTF-8 and private use never moved.
  bool newer = version_number(pcre2_version) > version_number(kHfUnicodeVersion);
  for (size_t r = 0; r < kHfCategoryRunCount; ++r) {
    auto k = static_cast<GeneralCategory>(kHfCategoryRuns[r].category);
    if (k == GeneralCategory::kCs || k == GeneralCategory::kCo) continue;
    if (k == GeneralCategory::kCn && !newer) continue;
    char32_t first = kHfCategoryRuns[r].first;
    char32_t last = r + 1 < kHfCategoryRunCount ? kHfCategoryRuns[r + 1].first - 1 : 0x10FFFF;
    for (char32_t c = first; c <= last; ++c)
      if (!probe.is(c, static_cast<size_t>(k))) add_point(g.ranges, c);
  }
  for (const auto& [first, last] : g.ranges)
    for (char32_t b = first >> 8; b <= last >> 8; ++b) g.blocks[b >> 6] |= uint64_t(1) << (b & 63);
  if (!g.ranges.empty()) g.min = g.ranges.front().first;
  std::string bytes;
  for (const auto& [first, last] : g.ranges)
    for (char32_t b = first >> 8; b <= last >> 8; ++b)
      for (char32_t c = b << 8; c < (b + 1) << 8; c += 64) {  // 64: one 2-byte lead's span
        bytes.clear();
        append_utf8(bytes, c);
        g.lead_has_gap[static_cast<unsigned char>(bytes[0])] = true;
      }
  return g;
}

const Gaps& gaps() {
  static const Gaps g = measure_gaps();
  return g;
}

// Adds the pattern's explicit characters (literals, \x escapes) and class ranges to `out`.
// Conservative: syntax characters count as literals too, which only narrows the stand-ins.
void scan_explicit(std::string_view p, Ranges& out) {
  bool in_class = false, range_open = false, have_prev = false;
  auto atom = [&](char32_t c) {
    if (in_class && range_open && have_prev && c >= out.back().first) {
      out.back().second = c;
      have_prev = range_open = false;
      return;
    }
    out.push_back({c, c});
    have_prev = in_class;
    range_open = false;
  };
  for (size_t i = 0; i < p.size();) {
    auto b = static_cast<unsigned char>(p[i]);
    if (b == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      i += 2;
      if (n == 'x') {
        size_t end = i;
        bool braced = i < p.size() && p[i] == '{';
        if (braced) end = p.find('}', i);
        if (end == std::string_view::npos) break;
        std::string hex(braced ? p.substr(i + 1, end - i - 1) : p.substr(i, 2));
        char32_t c = static_cast<char32_t>(std::strtoul(hex.c_str(), nullptr, 16));
        i = braced ? end + 1 : std::min(p.size(), i + 2);
        atom(c);
      } else if ((n == 'p' || n == 'P' || n == 'N') && i < p.size() && p[i] == '{') {
        size_t end = p.find('}', i);
        i = end == std::string_view::npos ? p.size() : end + 1;
        have_prev = range_open = false;
      } else if ((n >= 'a' && n <= 'z') || (n >= 'A' && n <= 'Z') || (n >= '0' && n <= '9')) {
        have_prev = range_open = false;  // a class shorthand, anchor or control escape
      } else {
        atom(static_cast<unsigned char>(n));
      }
      continue;
    }
    if (b >= 0x80) {
      size_t len = 0;
      char32_t c = utf8_decode(p, i, &len);
      i += len;
      atom(c);
      continue;
    }
    ++i;
    if (b == '[' && !in_class) {
      in_class = true;
      have_prev = range_open = false;
      continue;
    }
    if (b == ']' && in_class) {
      in_class = false;
      continue;
    }
    if (b == '-' && in_class && have_prev) {
      range_open = true;
      continue;
    }
    atom(b);
  }
  std::sort(out.begin(), out.end());
  Ranges merged;
  for (const auto& r : out) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  out.swap(merged);
}

// The simple upper- (or lower-) case mapping of `c`.
char32_t case_partner(char32_t c, bool upper) {
  auto u = static_cast<utf8proc_int32_t>(c);
  return static_cast<char32_t>(upper ? utf8proc_toupper(u) : utf8proc_tolower(u));
}

}  // namespace

const std::vector<std::pair<char32_t, char32_t>>& pcre2_category_gaps() {
  return gaps().ranges;
}

SubjectRewriter::SubjectRewriter(std::string_view pattern) {
  const Gaps& g = gaps();
  if (g.ranges.empty()) return;
  scan_explicit(pattern, explicit_);
  // Stand-ins only for the (category, length) pairs some gap needs.
  std::array<std::array<bool, 4>, kCategoryCount> needed{};
  for (const auto& [first, last] : g.ranges)
    for (char32_t c = first; c <= last; ++c)
      needed[static_cast<size_t>(hf_category(c))][utf8_length(c) - 1] = true;
  for (size_t r = 0; r < kHfCategoryRunCount; ++r) {
    size_t k = kHfCategoryRuns[r].category;
    char32_t first = kHfCategoryRuns[r].first;
    char32_t last = r + 1 < kHfCategoryRunCount ? kHfCategoryRuns[r + 1].first - 1 : 0x10FFFF;
    for (char32_t c = first; c <= last; ++c) {
      if (c >= 0xD800 && c <= 0xDFFF) break;
      size_t len = utf8_length(c);
      if (!needed[k][len - 1] || stand_ins_[k][len - 1] != 0) {
        // Skip to the first code point of the next UTF-8 length.
        char32_t next = len == 1 ? 0x80 : len == 2 ? 0x800 : len == 3 ? 0x10000 : 0x110000;
        if (next > last) break;
        c = next - 1;
        continue;
      }
      // Not a character the pattern names, nor one whose case partner it names (caseless
      // parts), nor whitespace (\s and \R are lists of characters, not a category).
      if (g.contains(c) || named(c) || named(case_partner(c, true)) ||
          named(case_partner(c, false)) || is_whitespace(c))
        continue;
      stand_ins_[k][len - 1] = c;
    }
  }
}

bool SubjectRewriter::named(char32_t c) const {
  return in_ranges(explicit_, c);
}

char32_t SubjectRewriter::stand_in(char32_t c) const {
  if (!gaps().contains(c) || named(c)) return c;
  char32_t s = stand_ins_[static_cast<size_t>(hf_category(c))][utf8_length(c) - 1];
  return s ? s : c;
}

std::string_view SubjectRewriter::rewrite(std::string_view text, std::string& storage) const {
  const Gaps& g = gaps();
  if (g.ranges.empty()) return text;
  bool copied = false;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t len = 0;
  for (size_t i = 0; i < text.size(); i += len) {
    unsigned b = p[i];
    len = utf8_len(static_cast<unsigned char>(b));
    if (!g.lead_has_gap[b]) continue;
    // The character's 256-code-point block straight from its bytes: most characters stop here.
    unsigned block = len == 1   ? 0
                     : len == 2 ? (b & 0x1F) >> 2
                     : len == 3
                         ? ((b & 0x0F) << 4) | ((p[i + 1] & 0x3F) >> 2)
                         : ((b & 0x07) << 10) | ((p[i + 1] & 0x3F) << 4) | ((p[i + 2] & 0x3F) >> 2);
    if (!g.block_has_gap(block)) continue;
    char32_t c = utf8_decode(text, i, &len);
    if (!g.contains(c)) continue;
    char32_t s = stand_in(c);
    if (s == c) continue;
    if (!copied) {
      storage.assign(text);
      copied = true;
    }
    std::string encoded;
    append_utf8(encoded, s);
    storage.replace(i, len, encoded);  // same length: offsets are kept
  }
  return copied ? std::string_view(storage) : text;
}

}  // namespace sft::text
