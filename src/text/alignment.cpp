// See alignment.h.
#include "text/alignment.h"

#include <utf8proc.h>

#include <algorithm>

#include "core/error.h"

namespace sft::text {

void apply_changes(std::string& text, std::vector<Align>& align,
                   const std::vector<CharChange>& changes, size_t skip_chars) {
  std::string out;
  std::vector<Align> out_align;
  out.reserve(text.size());
  out_align.reserve(text.size());
  size_t pos = 0;
  auto consume = [&] {
    if (pos >= text.size())
      fail("tokenizer", "internal error: a normalizer's alignment consumed past its text");
    pos += utf8_len(static_cast<unsigned char>(text[pos]));
  };
  for (size_t i = 0; i < skip_chars; ++i) consume();
  for (const CharChange& ch : changes) {
    Align a;
    if (ch.change > 0) {
      // An insertion at the very start has no character before it: HF gives it (0, 0).
      a = pos == 0 ? Align{0, 0} : align[pos - 1];
    } else {
      if (pos >= text.size())
        fail("tokenizer", "internal error: a normalizer's alignment consumed past its text");
      a = align[pos];
      consume();
      for (int k = 0; k < -ch.change; ++k) consume();
    }
    size_t before = out.size();
    append_utf8(out, ch.c);
    out_align.insert(out_align.end(), out.size() - before, a);
  }
  text.swap(out);
  align.swap(out_align);
}

namespace {

int combining_class(char32_t c) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(c))->combining_class;
}

// The primary composite of (a, b), or 0 when they do not compose. utf8proc's composition
// of the two-character sequence gives exactly that (Hangul included).
char32_t compose_pair(char32_t a, char32_t b) {
  utf8proc_int32_t buf[2] = {static_cast<utf8proc_int32_t>(a), static_cast<utf8proc_int32_t>(b)};
  utf8proc_ssize_t n = utf8proc_normalize_utf32(buf, 2, UTF8PROC_COMPOSE);
  return n == 1 ? static_cast<char32_t>(buf[0]) : 0;
}

struct Decomposed {
  int ccc;
  char32_t c;
  int change;
};

// Full decomposition of every character, then canonical ordering: each run that starts at
// a starter (or the text start) is stably sorted by combining class. A character's first
// decomposed code point replaces it (change 0), the others are insertions (+1); the
// changes travel with the code points when they are reordered, as in HF.
void decompose(std::string_view text, bool compat, std::vector<Decomposed>& out) {
  int options = UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0);
  size_t pending = 0;
  auto sort_pending = [&] {
    std::stable_sort(out.begin() + long(pending), out.end(),
                     [](const Decomposed& x, const Decomposed& y) { return x.ccc < y.ccc; });
    pending = out.size();
  };
  utf8proc_int32_t buf[64];
  size_t n;
  for (size_t i = 0; i < text.size(); i += n) {
    char32_t c = utf8_decode(text, i, &n);
    int bound = 0;
    utf8proc_ssize_t m = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buf, 64,
                                                 static_cast<utf8proc_option_t>(options), &bound);
    if (m < 0 || m > 64)
      fail("tokenizer", "internal error: cannot decompose U+" + std::to_string(unsigned(c)));
    for (utf8proc_ssize_t k = 0; k < m; ++k) {
      auto d = static_cast<char32_t>(buf[k]);
      int ccc = combining_class(d);
      if (ccc == 0) sort_pending();
      out.push_back({ccc, d, k == 0 ? 0 : 1});
    }
  }
  sort_pending();
}

// Canonical composition over the decomposed stream. A composite keeps the change of its
// first part plus the second's, minus one (it absorbs a character); characters blocked
// behind a composee are held back and emitted after it.
void recompose(const std::vector<Decomposed>& in, std::vector<CharChange>& out) {
  bool has_composee = false;
  CharChange composee{0, 0};
  int last_ccc = -1;  // combining class of the last held-back character; -1 when none
  std::vector<CharChange> held;
  auto flush = [&] {
    out.push_back(composee);
    out.insert(out.end(), held.begin(), held.end());
    held.clear();
  };
  for (const Decomposed& d : in) {
    if (!has_composee) {
      if (d.ccc != 0) {
        out.push_back({d.c, d.change});
      } else {
        composee = {d.c, d.change};
        has_composee = true;
      }
      continue;
    }
    bool blocked = last_ccc >= 0 && last_ccc >= d.ccc;
    if (!blocked) {
      if (char32_t r = compose_pair(composee.c, d.c)) {
        composee = {r, composee.change + d.change - 1};
        continue;
      }
    }
    if (d.ccc == 0) {
      flush();
      composee = {d.c, d.change};
      last_ccc = -1;
      continue;
    }
    held.push_back({d.c, d.change});
    last_ccc = d.ccc;
  }
  if (has_composee) flush();
}

}  // namespace

void normalization_changes(std::string_view text, NormalForm form, std::vector<CharChange>& out) {
  out.clear();
  bool ascii = std::all_of(text.begin(), text.end(),
                           [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) {
    for (char c : text) out.push_back({static_cast<char32_t>(c), 0});
    return;
  }
  std::vector<Decomposed> dec;
  bool compat = form == NormalForm::kNFKC || form == NormalForm::kNFKD;
  decompose(text, compat, dec);
  if (form == NormalForm::kNFD || form == NormalForm::kNFKD) {
    for (const Decomposed& d : dec) out.push_back({d.c, d.change});
    return;
  }
  recompose(dec, out);
}

void identity_alignment(std::string_view text, uint32_t base, std::vector<Align>& out) {
  out.clear();
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_len(static_cast<unsigned char>(text[i]));
    Align a{base + uint32_t(i), base + uint32_t(i + n)};
    out.insert(out.end(), n, a);
    i += n;
  }
}

}  // namespace sft::text
