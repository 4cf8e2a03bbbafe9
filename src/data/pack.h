// Packing tokenized rows into sequences of at most max_length tokens, exactly as TRL's
// pack_dataset does, so that the same rows give the same packed rows:
//
//   bfd        best-fit decreasing: rows (truncated to max_length) sorted by length,
//              longest first (ties in row order), each put in the open bin with the least
//              room that fits it (ties: the bin that got that room first), else a new bin
//   bfd_split  as bfd, but a row longer than max_length is first cut into max_length pieces
//              (the last one shorter) that are packed as separate documents
//   wrapped    all tokens concatenated and cut every max_length tokens, ignoring documents
//
// TRL runs these through datasets.map in batches of 1000 rows (per process when
// dataset_num_proc > 1), and packs each batch on its own; map_batch_size / map_num_proc
// reproduce that. Empty rows are dropped by bfd/bfd_split (as TRL does) and kept by wrapped.
//
// Planning works on lengths only and yields segments (row, start, length); materializing
// builds the tokens, labels and the per-document position ids and lengths the padding-free
// model consumes. For bfd/bfd_split the first label of every document is -100, as TRL's
// padding-free collator sets labels where position_ids == 0, so no document's first token is
// the target of the previous document's last position. Wrapped rows are one "document".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sft::data {

enum class PackingStrategy { kBfd, kBfdSplit, kWrapped };

// "bfd", "bfd_split", "wrapped"; throws "[data] ..." for anything else.
PackingStrategy parse_packing_strategy(const std::string& name);
const char* packing_strategy_name(PackingStrategy strategy);

struct PackOptions {
  PackingStrategy strategy = PackingStrategy::kBfd;
  uint32_t max_length = 1024;
  uint32_t map_batch_size = 1000;  // datasets.map's default batch size
  uint32_t map_num_proc = 1;       // TRL's dataset_num_proc (contiguous shards)
};

struct PackSegment {
  uint32_t row = 0;     // source row
  uint32_t start = 0;   // first token taken from it
  uint32_t length = 0;  // tokens taken
  bool operator==(const PackSegment&) const = default;
};

struct PackPlan {
  // Per packed row, its pieces of source rows in order. For bfd/bfd_split each segment is a
  // document (TRL's seq_lengths are the segment lengths); for wrapped they are not.
  std::vector<std::vector<PackSegment>> rows;
  bool segments_are_documents = true;
};

// Plans the packing of rows with the given token counts.
PackPlan plan_packing(std::span<const uint32_t> lengths, const PackOptions& options);

// One source row's tokens, borrowed (from memory or a memory-mapped token cache).
struct TokenRow {
  std::span<const int32_t> input_ids;
  std::span<const int32_t> labels;  // same length as input_ids
};

struct PackedRow {
  std::vector<int32_t> input_ids;
  std::vector<int32_t> labels;
  std::vector<int32_t> position_ids;  // restart at 0 at every document
  std::vector<int32_t> doc_lengths;   // sums to input_ids.size()
};

constexpr int32_t kIgnoreLabel = -100;

// Builds packed row `index` of `plan` from the source rows.
PackedRow materialize_packed_row(const PackPlan& plan, size_t index,
                                 std::span<const TokenRow> rows);

}  // namespace sft::data
