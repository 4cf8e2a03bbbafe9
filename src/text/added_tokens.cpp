// See added_tokens.h.
#include "text/added_tokens.h"

#include "text/alignment.h"
#include "text/normalizers.h"
#include "text/unicode.h"

namespace sft::text {

void TokenTrie::insert(std::string_view key, int32_t value) {
  if (key.empty()) return;
  int32_t node = 0;
  first_byte_[static_cast<unsigned char>(key[0])] = true;
  for (unsigned char c : key) {
    uint64_t edge = (uint64_t(node) << 8) | c;
    auto it = edges_.find(edge);
    if (it == edges_.end()) {
      it = edges_.emplace(edge, nodes_++).first;
      values_.push_back(-1);
    }
    node = it->second;
  }
  if (values_[size_t(node)] < 0) values_[size_t(node)] = value;  // the first of duplicates wins
}

bool TokenTrie::find(std::string_view text, size_t pos, size_t* begin, size_t* end,
                     int32_t* value) const {
  for (size_t i = pos; i < text.size(); ++i) {
    if (!first_byte_[static_cast<unsigned char>(text[i])]) continue;
    int32_t node = 0, best = -1;
    size_t best_end = 0;
    for (size_t j = i; j < text.size(); ++j) {
      auto it = edges_.find((uint64_t(node) << 8) | static_cast<unsigned char>(text[j]));
      if (it == edges_.end()) break;
      node = it->second;
      if (values_[size_t(node)] >= 0) best = values_[size_t(node)], best_end = j + 1;
    }
    if (best >= 0) {
      *begin = i;
      *end = best_end;
      *value = best;
      return true;
    }
  }
  return false;
}

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer)
    : tokens_(std::move(tokens)), normalizer_(normalizer) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    AddedToken& t = tokens_[i];
    by_id_.emplace(t.id, i);
    tokens_[i].decoded = t.content;
    if (!t.normalized) {
      raw_trie_.insert(t.content, int32_t(i));
    } else {
      std::string content = t.content;
      if (normalizer_) normalizer_->normalize(content);
      normalized_trie_.insert(content, int32_t(i));
      tokens_[i].decoded = content;
    }
  }
}

const AddedToken* AddedVocabulary::find_by_id(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocabulary::find_by_content(std::string_view content) const {
  for (const auto& t : tokens_)
    if (t.content == content) return &t;
  return nullptr;
}

namespace {
bool word_char_before(std::string_view s, size_t pos) {
  if (pos == 0) return false;
  size_t b = pos - 1, n;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  return is_word_char(utf8_decode(s, b, &n));
}
bool word_char_after(std::string_view s, size_t pos) {
  size_t n;
  return pos < s.size() && is_word_char(utf8_decode(s, pos, &n));
}
}  // namespace

void AddedVocabulary::split(std::string_view text, const TokenTrie& trie, bool at_origin,
                            bool split_special_tokens, Pieces& out, const Align* align) const {
  size_t start_offset = 0, pos = 0, b, e, n;
  int32_t index;
  while (!trie.empty() && trie.find(text, pos, &b, &e, &index)) {
    pos = e;
    const AddedToken& t = tokens_[size_t(index)];
    if (split_special_tokens && t.special) continue;
    if (t.single_word && (word_char_before(text, b) || word_char_after(text, e))) continue;
    if (t.lstrip) {
      size_t s = b;
      while (s > 0) {
        size_t c = s - 1;
        while (c > 0 && (static_cast<unsigned char>(text[c]) & 0xC0) == 0x80) --c;
        if (!is_whitespace(utf8_decode(text, c, &n))) break;
        s = c;
      }
      b = std::max(s, start_offset);
    }
    if (t.rstrip)
      while (e < text.size() && is_whitespace(utf8_decode(text, e, &n))) e += n;
    if (start_offset < b)
      out.add(text.substr(start_offset, b - start_offset), -1, at_origin && start_offset == 0,
              align ? align + start_offset : nullptr);
    // HF's token covers its whole match, stripped whitespace included.
    out.add_token(t.id, align ? Align{align[b].begin, align[e - 1].end} : Align{});
    start_offset = e;
    pos = std::max(pos, e);
  }
  if (start_offset < text.size())
    out.add(text.substr(start_offset), -1, at_origin && start_offset == 0,
            align ? align + start_offset : nullptr);
}

void AddedVocabulary::extract_and_normalize(std::string_view input, bool split_special_tokens,
                                            Pieces& out, std::string& scratch) const {
  out.clear();
  thread_local Pieces raw;
  raw.clear();
  raw.track = out.track;
  if (out.track) {
    extract_and_normalize_aligned(input, split_special_tokens, raw, out, scratch);
    return;
  }
  split(input, raw_trie_, true, split_special_tokens, raw);
  for (const auto& p : raw.items) {
    if (p.token_id >= 0) {
      out.add_token(p.token_id);
      continue;
    }
    scratch.assign(raw.view(p));
    size_t head = 0;
    if (p.at_origin && !scratch.empty()) head = utf8_len(static_cast<unsigned char>(scratch[0]));
    if (normalizer_) normalizer_->normalize(scratch, head);
    split(scratch, normalized_trie_, p.at_origin && head > 0, split_special_tokens, out);
  }
}

void AddedVocabulary::extract_and_normalize_aligned(std::string_view input,
                                                    bool split_special_tokens, Pieces& raw,
                                                    Pieces& out, std::string& scratch) const {
  std::vector<Align> align;
  identity_alignment(input, 0, align);
  split(input, raw_trie_, true, split_special_tokens, raw, align.data());
  for (const auto& p : raw.items) {
    if (p.token_id >= 0) {
      out.add_token(p.token_id, {p.begin, p.end});
      continue;
    }
    scratch.assign(raw.view(p));
    // HF normalizes each piece as its own string: alignments relative to the piece's start
    // (an insertion at its very start aligns to (0, 0) of the piece, not of the input).
    const Align* a = raw.align_of(p);
    uint32_t shift = a[0].begin;
    align.clear();
    for (size_t i = 0; i < scratch.size(); ++i)
      align.push_back({a[i].begin - shift, a[i].end - shift});
    if (normalizer_) normalizer_->normalize_aligned(scratch, align);
    // Metaspace's "first" asks whether the piece still starts at input byte 0.
    bool origin = p.at_origin && !scratch.empty() && align[0].begin == 0;
    for (auto& x : align) x.begin += shift, x.end += shift;
    split(scratch, normalized_trie_, origin, split_special_tokens, out, align.data());
  }
}

}  // namespace sft::text
