// See bpe.h.
#include "text/bpe.h"

#include <algorithm>
#include <cstdio>

#include "text/unicode.h"

namespace sft::text {

void Vocab::reserve(size_t n, size_t bytes) {
  blob_.reserve(bytes);
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  slots_.assign(cap, -1);
  mask_ = cap - 1;
}

void Vocab::grow() {
  std::vector<int32_t> old;
  old.swap(slots_);
  size_t cap = old.empty() ? 16 : old.size() * 2;
  slots_.assign(cap, -1);
  mask_ = cap - 1;
  for (int32_t id : old) {
    if (id < 0) continue;
    size_t i = hash(token_of(id)) & mask_;
    while (slots_[i] >= 0) i = (i + 1) & mask_;
    slots_[i] = id;
  }
}

bool Vocab::insert(std::string_view token, int32_t id) {
  if (find(token) >= 0 || has_id(id)) return false;
  if ((size_ + 1) * 2 > slots_.size()) grow();
  if (size_t(id) >= len_.size()) {
    off_.resize(size_t(id) + 1, 0);
    len_.resize(size_t(id) + 1, kAbsent);
  }
  off_[size_t(id)] = static_cast<uint32_t>(blob_.size());
  len_[size_t(id)] = static_cast<uint32_t>(token.size());
  blob_.append(token);
  size_t i = hash(token) & mask_;
  while (slots_[i] >= 0) i = (i + 1) & mask_;
  slots_[i] = id;
  ++size_;
  return true;
}

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
// Ids index flat tables; the largest real vocab is ~262k, so this only stops absurd files.
constexpr int64_t kMaxTokenId = int64_t(1) << 24;

bool candidate_after(const BpeScratch::Candidate& x, const BpeScratch::Candidate& y) {
  return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos;  // min-heap on (rank, pos)
}
}  // namespace

BpeModel::BpeModel(const Json& spec, TokenizerJson& data, const LoadContext& ctx)
    : file_(ctx.file) {
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

  if (!data.has_vocab)
    ctx.fail(place + ".vocab",
             spec.contains("vocab") ? "expected an object of token → id" : "missing field 'vocab'");
  size_t bytes = 0;
  for (const auto& v : data.vocab) bytes += v.first.size();
  vocab_.reserve(data.vocab.size(), bytes);
  for (const auto& [token, id] : data.vocab) {
    if (id < 0 || id >= kMaxTokenId)
      ctx.fail(place + ".vocab['" + token + "']",
               "id " + std::to_string(id) + " is negative or above " + std::to_string(kMaxTokenId),
               "token ids must be dense, from 0 to the vocab size");
    int32_t other = vocab_.find(token);
    if (other >= 0)
      ctx.fail(place + ".vocab", "duplicate key '" + token + "'",
               "every token may appear once in the vocab");
    if (vocab_.has_id(static_cast<int32_t>(id)))
      ctx.fail(place + ".vocab['" + token + "']",
               "id " + std::to_string(id) + " is also used by '" +
                   std::string(vocab_.token_of(static_cast<int32_t>(id))) + "'",
               "every vocab id must be unique");
    vocab_.insert(token, static_cast<int32_t>(id));
  }
  if (!unk_token_.empty()) unk_id_ = token_to_id(unk_token_);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[size_t(b)] = token_to_id(name);
  }

  if (!data.has_merges)
    ctx.fail(place + ".merges",
             spec.contains("merges") ? "expected an array" : "missing field 'merges'");
  merges_.reserve(data.merges.size());
  std::string merged;
  for (size_t i = 0; i < data.merges.size(); ++i) {
    auto where = [&] { return place + ".merges[" + std::to_string(i) + "]"; };
    const std::string& a = data.merges[i].first;
    const std::string& b = data.merges[i].second;
    if (!data.bad_merges.empty() && data.bad_merges.front() == i) {
      ctx.fail(where(), "merge '" + a + "' is not two tokens separated by a space");
    }
    int32_t ia = token_to_id(a), ib = token_to_id(b);
    const char* hint = "every merge must name two vocab tokens whose concatenation is in the vocab";
    if (ia < 0) ctx.fail(where(), "token '" + std::string(a) + "' not in vocab", hint);
    if (ib < 0) ctx.fail(where(), "token '" + std::string(b) + "' not in vocab", hint);
    std::string_view tail = b;
    if (!prefix_.empty() && tail.substr(0, prefix_.size()) == prefix_)
      tail.remove_prefix(prefix_.size());
    merged.assign(a).append(tail);
    int32_t im = token_to_id(merged);
    if (im < 0) ctx.fail(where(), "merged token '" + merged + "' not in vocab", hint);
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

void BpeModel::tokenize_with_spans(std::string_view word, BpeScratch& s, std::vector<int32_t>& out,
                                   std::vector<std::pair<uint32_t, uint32_t>>& spans) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    int32_t id = token_to_id(word);
    if (id >= 0) {
      out.push_back(id);
      spans.push_back({0, uint32_t(word.size())});
      return;
    }
  }
  merge_word(word, s);
  merge_all(s);
  // Positions accumulate over the symbols kept, so a character dropped for lack of an unk
  // token shifts the later offsets, as in HF.
  uint32_t pos = 0;
  for (const auto& sym : s.symbols) {
    if (!sym.len) continue;
    out.push_back(sym.id);
    spans.push_back({pos, pos + sym.len});
    pos += sym.len;
  }
}

}  // namespace sft::text
