// Dataset preparation end to end: files → rows → examples → encoded rows → truncated or
// packed training rows, stored in the token cache and opened memory-mapped.
//
//   sources.h (split files) → format.h (examples) → encode.h (ids + labels, all cores)
//     → without packing: truncation to max_length (truncation_mode), rows left with no
//       trained token dropped and counted (as TRL)
//     → with packing: pack.h (bfd / bfd_split / wrapped) into rows of at most max_length
//     → token_cache.h shards under cache_dir/<fingerprint>/
//
// The fingerprint covers everything that changes the result (the dataset files' paths,
// sizes and modification times, the tokenizer and template bytes, the options below); a
// second call with the same inputs opens the cache and says so instead of preparing again.
// Progress goes to stderr: a bar (rows/s, tokens/s, ETA) on a terminal, plain periodic lines
// otherwise. The PrepareReport is the audit `sft prepare --report` prints (and `sft train`
// prints before training).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/encode.h"
#include "data/format.h"
#include "data/mixture.h"
#include "data/pack.h"
#include "data/sources.h"

namespace sft::data {

struct PrepareOptions {
  DatasetSource source;
  std::string split = "train";
  // --datasets: when not empty, the rows are this mixture's and source/split are not used.
  std::vector<MixtureEntry> mixture;
  FormatOptions format;
  bool skip_invalid_rows = false;

  std::string tokenizer_path;                     // folder with tokenizer.json (+ config)
  std::optional<std::string> chat_template_path;  // overrides the tokenizer's template
  EncodeOptions encode;

  std::optional<int64_t> max_length = 1024;    // nullopt: no truncation (not with packing)
  std::string truncation_mode = "keep_start";  // or keep_end
  bool packing = false;
  PackOptions pack;  // strategy; max_length is taken from max_length above

  std::string cache_dir;     // "" = no cache: prepared in memory only
  uint32_t num_threads = 0;  // 0 = all cores
  bool show_progress = true;

  // Called in order with every kept row after truncation and before packing (the point TRL's
  // unpacked dataset is at; `sft prepare --dump`). Setting it bypasses reading the cache
  // (the rows must be produced), the cache is still written.
  std::function<void(const TokenRow&)> on_row;
};

struct PrepareReport {
  std::string format;  // format_name() of the detected format
  uint64_t rows_read = 0;
  uint64_t rows_kept = 0;
  std::map<std::string, uint64_t> rows_dropped;  // reason → rows (invalid-row reasons too)
  // Rows cut to max_length, by truncation or (bfd packing) by pack_dataset's own cut, and the
  // tokens those cuts dropped; bfd_split and wrapped keep every token.
  uint64_t rows_truncated = 0;
  uint64_t tokens_truncated = 0;
  uint64_t prompt_not_prefix = 0;
  uint64_t double_bos = 0;        // rows starting with two identical special tokens
  uint64_t double_bos_fixed = 0;  // ... of which the first was dropped (fix_double_bos)
  uint64_t tokens = 0;            // encoded, before packing/truncation (rows dropped included)
  uint64_t output_tokens = 0;     // in the final rows (after truncation/packing)
  uint64_t trained_tokens = 0;    // labels != -100 in the final rows
  // Kept rows whose EOS / end-of-turn token is trained in the final rows (so one that lost it
  // to truncation, or whose end token became a document's masked first label, does not count).
  uint64_t rows_training_eos = 0;
  // Kept rows (after truncation, before packing) per power-of-two length bucket: index 0 for
  // lengths 0-1, k for [2^k, 2^(k+1)).
  std::vector<uint64_t> length_histogram;
  uint64_t packed_rows = 0;
  double packing_fill = 0;  // tokens / (packed_rows * max_length), packing only
  bool from_cache = false;
  double seconds = 0;

  std::string to_text() const;  // the human-readable audit
  Json to_json() const;
  // Reads to_json()'s output (the copy stored in the token cache's manifest).
  static PrepareReport from_json(const Json& json);
};

// The prepared training rows (memory-mapped from the cache, or in memory).
class PreparedDataset {
 public:
  virtual ~PreparedDataset() = default;
  virtual size_t num_rows() const = 0;
  virtual TokenRow row(size_t i) const = 0;
  // Document lengths of packed row i (sums to its length); one document when not packed.
  virtual std::span<const int32_t> doc_lengths(size_t i) const = 0;
  virtual const PrepareReport& report() const = 0;
  virtual const std::string& fingerprint() const = 0;
};

// The cache key of a preparation: the files' identities (path, size, mtime), the tokenizer,
// tokenizer config and template bytes, and every option that changes the rows (not the
// thread count, progress or cache folder).
std::string prepare_fingerprint(const PrepareOptions& options,
                                const std::vector<std::string>& files);

// Prepares (or opens from the cache) the split `options.split`. Throws sft::Error for bad
// input as the readers, format and encoder do; a half-written cache is never reused.
std::unique_ptr<PreparedDataset> prepare_dataset(const PrepareOptions& options);

}  // namespace sft::data
