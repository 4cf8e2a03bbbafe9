// See bpe.h.
#include "text/bpe.h"

#include <algorithm>
#include <cstdio>

#include "text/unicode.h"

namespace sft::text {

void MergeTable::reserve(size_t n) {
  size_t cap = 16;
  int bits = 4;
  while (cap < n * 2) cap <<= 1, ++bits;
  entries_.assign(cap, Entry{});
  mask_ = cap - 1;
  shift_ = 64 - bits;
  size_ = 0;
}

void MergeTable::insert(int32_t a, int32_t b, uint32_t rank, int32_t merged) {
  uint64_t key = pack(a, b);
  for (size_t i = slot(key);; i = (i + 1) & mask_) {
    Entry& e = entries_[i];
    if (e.key == kEmpty) ++size_;
    if (e.key == kEmpty || e.key == key) {
      e = {key, rank, merged};
      return;
    }
  }
}

namespace {
constexpr size_t kCacheMaxWordBytes = 256;
constexpr size_t kCacheMaxEntries = 1 << 18;

bool candidate_after(const BpeScratch::Candidate& x, const BpeScratch::Candidate& y) {
  return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos;  // min-heap on (rank, pos)
}
}  // namespace

BpeModel::BpeModel(const Json& spec, const LoadContext& ctx) : file_(ctx.file) {
  const std::string place = "model";
  if (ctx.string_or(spec, place, "type", "BPE") != "BPE")
    ctx.fail(place + ".type", "unsupported model type '" + ctx.string(spec, place, "type") + "'",
             "sft supports BPE models only (byte-level and SentencePiece-style); WordPiece, "
             "WordLevel and Unigram are not supported");
  if (spec.contains("dropout") && spec["dropout"].is_number() && spec["dropout"].get<double>() > 0)
    ctx.fail(place + ".dropout", "BPE dropout is not supported",
             "set \"dropout\": null; dropout makes encodings random");
  unk_token_ = ctx.string_or(spec, place, "unk_token", "");
  prefix_ = ctx.string_or(spec, place, "continuing_subword_prefix", "");
  suffix_ = ctx.string_or(spec, place, "end_of_word_suffix", "");
  fuse_unk_ = ctx.bool_or(spec, place, "fuse_unk", false);
  byte_fallback_ = ctx.bool_or(spec, place, "byte_fallback", false);
  ignore_merges_ = ctx.bool_or(spec, place, "ignore_merges", false);

  const Json& vocab = ctx.field(spec, place, "vocab");
  if (!vocab.is_object()) ctx.fail(place + ".vocab", "expected an object of token → id");
  vocab_.reserve(vocab.size());
  std::vector<std::pair<int32_t, const std::string*>> by_id;
  by_id.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const Json& v = it.value();
    if (!v.is_number_unsigned() || v.get<uint64_t>() > 0x7FFFFFFF)
      ctx.fail(place + ".vocab['" + it.key() + "']",
               "expected a non-negative integer id, got " + v.dump());
    auto [pos, inserted] = vocab_.emplace(it.key(), static_cast<int32_t>(v.get<uint64_t>()));
    by_id.emplace_back(pos->second, &pos->first);
  }
  int32_t max_id = -1;
  for (auto& [id, _] : by_id) max_id = std::max(max_id, id);
  id_to_token_.resize(size_t(max_id + 1));
  has_id_.assign(size_t(max_id + 1), false);
  for (auto& [id, token] : by_id) {
    if (has_id_[size_t(id)])
      ctx.fail(place + ".vocab['" + *token + "']",
               "id " + std::to_string(id) + " is also used by '" + id_to_token_[size_t(id)] + "'",
               "every vocab id must be unique");
    has_id_[size_t(id)] = true;
    id_to_token_[size_t(id)] = *token;
  }
  if (!unk_token_.empty()) unk_id_ = token_to_id(unk_token_);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[size_t(b)] = token_to_id(name);
  }

  const Json& merges = ctx.field(spec, place, "merges");
  if (!merges.is_array()) ctx.fail(place + ".merges", "expected an array");
  merges_.reserve(merges.size());
  std::string merged;
  for (size_t i = 0; i < merges.size(); ++i) {
    const Json& m = merges[i];
    std::string where = place + ".merges[" + std::to_string(i) + "]";
    std::string_view a, b;
    std::string joined;
    if (m.is_string()) {
      const auto& s = m.get_ref<const std::string&>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos)
        ctx.fail(where, "merge '" + s + "' is not two tokens separated by a space");
      a = std::string_view(s).substr(0, sp);
      b = std::string_view(s).substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get_ref<const std::string&>();
      b = m[1].get_ref<const std::string&>();
    } else {
      ctx.fail(where, "expected \"a b\" or [\"a\", \"b\"], got " + m.dump());
    }
    int32_t ia = token_to_id(a), ib = token_to_id(b);
    const char* hint = "every merge must name two vocab tokens whose concatenation is in the vocab";
    if (ia < 0) ctx.fail(where, "token '" + std::string(a) + "' not in vocab", hint);
    if (ib < 0) ctx.fail(where, "token '" + std::string(b) + "' not in vocab", hint);
    std::string_view tail = b;
    if (!prefix_.empty() && tail.substr(0, prefix_.size()) == prefix_)
      tail.remove_prefix(prefix_.size());
    merged.assign(a).append(tail);
    int32_t im = token_to_id(merged);
    if (im < 0) ctx.fail(where, "merged token '" + merged + "' not in vocab", hint);
    merges_.insert(ia, ib, static_cast<uint32_t>(i), im);
  }
}

int32_t BpeModel::unk_id() const {
  if (unk_id_ < 0)
    fail_in_file("tokenizer", {file_, "model.unk_token"},
                 "unk_token '" + unk_token_ + "' is not in the vocab",
                 "add it to model.vocab or set unk_token to null");
  return unk_id_;
}

void BpeModel::merge_word(std::string_view word, BpeScratch& s) const {
  s.symbols.clear();
  auto add = [&](int32_t id, uint32_t len) {
    int32_t n = static_cast<int32_t>(s.symbols.size());
    s.symbols.push_back({id, n - 1, n + 1, len});
  };
  int32_t pending_unk = -1;
  uint32_t pending_len = 0;
  size_t n;
  for (size_t i = 0; i < word.size(); i += n) {
    n = utf8_len(static_cast<unsigned char>(word[i]));
    std::string_view ch = word.substr(i, n);
    if ((!prefix_.empty() && i > 0) || (!suffix_.empty() && i + n == word.size())) {
      s.piece.assign(i > 0 ? prefix_ : "").append(ch).append(i + n == word.size() ? suffix_ : "");
      ch = s.piece;
    }
    int32_t id = token_to_id(ch);
    if (id >= 0) {
      if (pending_unk >= 0) add(pending_unk, pending_len), pending_unk = -1;
      add(id, uint32_t(n));
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char c : ch) all &= byte_ids_[c] >= 0;
      if (all) {
        // HF flushes no pending unk here: byte tokens go in before it.
        for (unsigned char c : ch) add(byte_ids_[c], 1);
        continue;
      }
    }
    if (!unk_token_.empty()) {
      if (pending_unk >= 0 && fuse_unk_) {
        pending_len += uint32_t(n);
      } else {
        if (pending_unk >= 0) add(pending_unk, pending_len);
        pending_unk = unk_id();
        pending_len = uint32_t(n);
      }
    }
  }
  if (pending_unk >= 0) add(pending_unk, pending_len);
  if (!s.symbols.empty()) s.symbols.back().next = -1;
}

void BpeModel::merge_all(BpeScratch& s) const {
  auto& sym = s.symbols;
  auto& heap = s.heap;
  heap.clear();
  uint32_t rank;
  int32_t merged;
  for (size_t i = 0; i + 1 < sym.size(); ++i)
    if (merges_.find(sym[i].id, sym[i + 1].id, &rank, &merged))
      heap.push_back({rank, int32_t(i), merged});
  std::make_heap(heap.begin(), heap.end(), candidate_after);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), candidate_after);
    auto top = heap.back();
    heap.pop_back();
    auto& cur = sym[size_t(top.pos)];
    if (cur.len == 0 || cur.next < 0) continue;
    auto& right = sym[size_t(cur.next)];
    if (!merges_.find(cur.id, right.id, &rank, &merged) || merged != top.merged) continue;
    cur.id = top.merged;
    cur.len += right.len;
    right.len = 0;
    cur.next = right.next;
    if (cur.next >= 0) sym[size_t(cur.next)].prev = top.pos;
    if (cur.prev >= 0 && merges_.find(sym[size_t(cur.prev)].id, cur.id, &rank, &merged)) {
      heap.push_back({rank, cur.prev, merged});
      std::push_heap(heap.begin(), heap.end(), candidate_after);
    }
    if (cur.next >= 0 && merges_.find(cur.id, sym[size_t(cur.next)].id, &rank, &merged)) {
      heap.push_back({rank, top.pos, merged});
      std::push_heap(heap.begin(), heap.end(), candidate_after);
    }
  }
}

void BpeModel::tokenize(std::string_view word, BpeScratch& s, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    int32_t id = token_to_id(word);
    if (id >= 0) return out.push_back(id);
  }
  bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    auto it = s.cache.find(word);
    if (it != s.cache.end()) {
      auto [off, cnt] = it->second;
      out.insert(out.end(), s.cache_ids.begin() + off, s.cache_ids.begin() + off + cnt);
      return;
    }
  }
  merge_word(word, s);
  merge_all(s);
  size_t first = out.size();
  for (const auto& sym : s.symbols)
    if (sym.len) out.push_back(sym.id);
  if (cacheable) {
    if (s.cache.size() >= kCacheMaxEntries) s.cache.clear(), s.cache_ids.clear();
    auto off = static_cast<uint32_t>(s.cache_ids.size());
    s.cache_ids.insert(s.cache_ids.end(), out.begin() + long(first), out.end());
    s.cache.emplace(std::string(word), std::make_pair(off, uint32_t(out.size() - first)));
  }
}

}  // namespace sft::text
