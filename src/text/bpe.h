// The BPE model (tokenizer.json "model" with type BPE), byte-level (GPT-2, Qwen, Llama 3,
// DeepSeek) and SentencePiece-style (Llama 2, Gemma: byte_fallback, unk_token, fuse_unk).
//
// Merging follows HF's Word::merge_all: repeatedly apply the lowest-rank mergeable pair,
// leftmost first, with a heap over a linked list of symbols — O(n log n), so a 100k-char
// word (SentencePiece tokenizers have no pre-tokenizer) is fine. Merge ranks live in a flat
// open-addressing table keyed by the id pair; per-thread scratch (BpeScratch) holds the
// symbol list, the heap and a word → ids cache, so a warm encode does no heap allocation.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/json.h"
#include "text/load_context.h"
#include "text/tokenizer_json.h"

namespace sft::text {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// token ↔ id. Tokens live back to back in one buffer and the hash table holds ids, so a
// lookup touches two cache lines instead of chasing unordered_map nodes (load time and
// encode both depend on it).
class Vocab {
 public:
  void reserve(size_t n, size_t bytes);
  // False when `token` is already present. Ids may be sparse but not repeated (see has_id).
  bool insert(std::string_view token, int32_t id);
  int32_t find(std::string_view token) const {
    if (slots_.empty()) return -1;
    for (size_t i = hash(token) & mask_;; i = (i + 1) & mask_) {
      int32_t id = slots_[i];
      if (id < 0) return -1;
      if (token_of(id) == token) return id;
    }
  }
  bool has_id(int32_t id) const {
    return id >= 0 && size_t(id) < len_.size() && len_[size_t(id)] != kAbsent;
  }
  std::string_view token_of(int32_t id) const {
    return std::string_view(blob_).substr(off_[size_t(id)], len_[size_t(id)]);
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint32_t kAbsent = ~uint32_t(0);
  static size_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  void grow();
  std::string blob_;
  std::vector<uint32_t> off_, len_;  // by id
  std::vector<int32_t> slots_;       // -1 = empty
  size_t mask_ = 0, size_ = 0;
};

// Pair of ids → (rank, merged id), open addressing with linear probing.
class MergeTable {
 public:
  void reserve(size_t n);
  void insert(int32_t a, int32_t b, uint32_t rank, int32_t merged);  // later inserts win
  // Returns false when (a, b) does not merge.
  bool find(int32_t a, int32_t b, uint32_t* rank, int32_t* merged) const {
    uint64_t key = pack(a, b);
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      const Entry& e = entries_[i];
      if (e.key == key) {
        *rank = e.rank;
        *merged = e.merged;
        return true;
      }
      if (e.key == kEmpty) return false;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  struct Entry {
    uint64_t key = kEmpty;
    uint32_t rank = 0;
    int32_t merged = 0;
  };
  static uint64_t pack(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  size_t slot(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
  std::vector<Entry> entries_;
  size_t mask_ = 0, size_ = 0;
  int shift_ = 64;
};

struct BpeScratch {
  struct Symbol {
    int32_t id, prev, next;
    uint32_t len;  // bytes of the word it covers; 0 once merged away
  };
  struct Candidate {
    uint32_t rank;
    int32_t pos, merged;
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::string piece;  // a character with prefix/suffix attached
  // word → [offset, count) into cache_ids
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, StringHash, std::equal_to<>> cache;
  std::vector<int32_t> cache_ids;
};

class BpeModel {
 public:
  // `spec` is the "model" object without vocab/merges, which come pre-scanned in `data`
  // (moved from). Throws naming ctx.file and the JSON place for anything malformed.
  BpeModel(const Json& spec, TokenizerJson& data, const LoadContext& ctx);

  // Appends the ids of one pre-tokenized word to `out`.
  void tokenize(std::string_view word, BpeScratch& scratch, std::vector<int32_t>& out) const;
  // Same ids, plus each token's [begin, end) bytes in `word` (HF's Token offsets: the byte
  // lengths of the symbols kept, laid end to end). Bypasses the word cache.
  void tokenize_with_spans(std::string_view word, BpeScratch& scratch, std::vector<int32_t>& out,
                           std::vector<std::pair<uint32_t, uint32_t>>& spans) const;

  int32_t token_to_id(std::string_view token) const { return vocab_.find(token); }
  bool has_id(int32_t id) const { return vocab_.has_id(id); }
  std::string_view id_to_token(int32_t id) const { return vocab_.token_of(id); }  // has_id first
  size_t vocab_size() const { return vocab_.size(); }
  size_t merge_count() const { return merges_.size(); }

 private:
  void merge_word(std::string_view word, BpeScratch& s) const;
  void merge_all(BpeScratch& s) const;
  int32_t unk_id() const;

  Vocab vocab_;
  MergeTable merges_;
  std::array<int32_t, 256> byte_ids_{};  // "<0xAB>" tokens for byte_fallback, -1 if absent
  std::string unk_token_, prefix_, suffix_, file_;
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
};

}  // namespace sft::text
