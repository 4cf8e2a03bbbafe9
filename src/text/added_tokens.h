// Added tokens (tokenizer.json "added_tokens"): special and non-special tokens matched in
// the raw text before the model, as HF's AddedVocabulary does:
//   1. tokens with normalized=false are found in the raw input,
//   2. each remaining piece is normalized, then tokens with normalized=true are found in it
//      (their content normalized the same way).
// Matching is leftmost-longest over a byte trie; single_word, lstrip and rstrip adjust or
// reject a match exactly like HF's find_matches. With split_special_tokens, special tokens
// are not matched at all (their text is tokenized as ordinary text).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/pieces.h"

namespace sft::text {

class Normalizer;

struct AddedToken {
  std::string content;
  int32_t id = -1;
  std::string decoded;  // what decode shows: the normalized content for normalized tokens
  bool special = false, single_word = false, lstrip = false, rstrip = false, normalized = false;
};

// A byte trie answering "longest token starting here".
class TokenTrie {
 public:
  void insert(std::string_view key, int32_t value);
  bool empty() const { return nodes_ == 1; }
  // Leftmost-longest match at or after `pos`: returns false when none.
  bool find(std::string_view text, size_t pos, size_t* begin, size_t* end, int32_t* value) const;

 private:
  std::unordered_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) → child
  std::vector<int32_t> values_{-1};              // per node; -1 when not a token end
  bool first_byte_[256] = {};
  int32_t nodes_ = 1;
};

class AddedVocabulary {
 public:
  // `normalizer` (may be null) is applied to normalized tokens' content and to the pieces.
  AddedVocabulary(std::vector<AddedToken> tokens, const Normalizer* normalizer);

  // Splits `input` into pieces of normalized text and added-token ids. With out.track, the
  // pieces carry alignments to `input` (Tokenizer::encode_with_offsets).
  void extract_and_normalize(std::string_view input, bool split_special_tokens, Pieces& out,
                             std::string& scratch) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find_by_id(int32_t id) const;
  const AddedToken* find_by_content(std::string_view content) const;
  bool empty() const { return tokens_.empty(); }

 private:
  // `align` (with out.track): the alignment of each byte of `text`.
  void split(std::string_view text, const TokenTrie& trie, bool at_origin,
             bool split_special_tokens, Pieces& out, const Align* align = nullptr) const;

  void extract_and_normalize_aligned(std::string_view input, bool split_special_tokens, Pieces& raw,
                                     Pieces& out, std::string& scratch) const;

  std::vector<AddedToken> tokens_;
  const Normalizer* normalizer_;
  TokenTrie raw_trie_, normalized_trie_;  // values: index into tokens_
  std::unordered_map<int32_t, size_t> by_id_;
};

}  // namespace sft::text
