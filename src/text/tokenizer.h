// The tokenizer facade: loads an HF tokenizer.json and encodes/decodes exactly like HF
// `tokenizers` (the Rust library behind transformers' fast tokenizers).
//
// Encode pipeline (HF's order): added tokens split off the raw text → normalizer on the
// pieces between them → pre-tokenizer → BPE per word → post-processor (only with
// add_special_tokens). Decode: ids → token strings (added tokens first), special tokens
// optionally skipped → decoder chain → joined.
//
// encode_with_offsets also gives every token the [begin, end) bytes of the input it came
// from — HF's Encoding.offsets in bytes instead of characters — by tracking, through the
// normalizer and pre-tokenizer, where every byte of the pipeline text stems from (HF
// NormalizedString's alignments). Only that call pays for the bookkeeping.
//
// A Tokenizer is immutable after loading; encode/decode may be called from many threads.
// Per-call scratch (pieces, BPE heap, word → ids cache) comes from an internal pool, so a
// warm encode allocates only its result. Input text must be valid UTF-8 (HF accepts only
// str); anything else is a clear "[tokenizer]" error.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sft {
class ThreadPool;
}

namespace sft::text {

struct AddedToken;

// Token ids with their input byte ranges. A token that covers part of a character (byte
// fallback, byte-level BPE) gets the whole character's range, as in HF; special tokens the
// post-processor adds get (0, 0).
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<std::pair<size_t, size_t>> offsets;
};

class Tokenizer {
 public:
  // PATH is a folder holding tokenizer.json, or the file itself. Throws sft::Error
  // ("[tokenizer] <file>: <place>: ...") for anything malformed or unsupported.
  static Tokenizer from_file(const std::string& path);
  // `source` names the text in messages.
  static Tokenizer from_json(std::string_view json_text, const std::string& source);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  // Same, appending to `out` (cleared first) so a caller can reuse its buffer.
  void encode_into(std::string_view text, bool add_special_tokens, std::vector<int32_t>& out) const;
  // The same ids as encode(), with offsets (single sequences; allocates per call).
  Encoding encode_with_offsets(std::string_view text, bool add_special_tokens = false) const;
  std::vector<int32_t> encode_pair(std::string_view a, std::string_view b,
                                   bool add_special_tokens = true) const;
  // Encodes every text, spread over `pool` (default_thread_pool() when null). The result
  // does not depend on the thread count.
  std::vector<std::vector<int32_t>> encode_batch(std::span<const std::string> texts,
                                                 bool add_special_tokens = false,
                                                 ThreadPool* pool = nullptr) const;

  // Ids that are neither in the vocab nor added tokens are skipped, as HF does.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // HF's encode_special_tokens / transformers' split_special_tokens: when on, special
  // tokens' text is tokenized as ordinary text.
  void set_split_special_tokens(bool on);
  bool split_special_tokens() const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;
  // The model's vocab plus added tokens not in it (HF get_vocab_size(with_added_tokens=True)).
  size_t vocab_size() const;
  const std::vector<AddedToken>& added_tokens() const;
  const std::string& source() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Streaming decode for generation: feed ids one at a time, get text as soon as it is
// complete UTF-8 (bytes of a partial character are held back), matching HF's DecodeStream.
class DecodeStream {
 public:
  explicit DecodeStream(const Tokenizer& tokenizer, bool skip_special_tokens = false)
      : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}
  // New text completed by `id`, or nullopt when it is still incomplete.
  std::optional<std::string> step(int32_t id);

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  std::string prefix_;
  size_t prefix_index_ = 0;
};

}  // namespace sft::text
