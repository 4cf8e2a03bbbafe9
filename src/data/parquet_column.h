// Decoding one column chunk of a Parquet file: its pages (dictionary, DATA_PAGE v1 and v2),
// repetition/definition levels (RLE/bit-packed hybrid) and values (PLAIN, PLAIN_DICTIONARY /
// RLE_DICTIONARY, RLE booleans), into levels plus the non-null values as JSON.
//
// Levels are Dremel's: per value slot, `rep` says at which repeated ancestor a new element
// starts (0 = new row) and `def` how many optional/repeated ancestors are present (max_def =
// a real value). Assembly into rows is parquet_assemble's job.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/parquet_metadata.h"
#include "data/row_json.h"

namespace sft::data {

// A leaf (primitive) column with the levels its position in the schema implies.
struct LeafColumn {
  std::string name;  // dotted path, e.g. "messages.list.element.content", for errors
  PhysicalType type = PhysicalType::kBoolean;
  Annotation annotation = Annotation::kNone;
  int max_def = 0;
  int max_rep = 0;
};

struct ColumnValues {
  std::vector<uint16_t> def;    // empty when max_def == 0 (every slot holds a value)
  std::vector<uint16_t> rep;    // empty when max_rep == 0 (every slot starts a row)
  std::vector<RowJson> values;  // the non-null values, in order
  size_t num_levels = 0;        // value slots (= rows when max_rep == 0)
};

// Decodes the chunk described by `meta` from the whole file held in memory.
ColumnValues read_column_chunk(std::span<const uint8_t> file_bytes, const ColumnChunkMeta& meta,
                               const LeafColumn& leaf, const std::string& file);

// Decodes `count` values of the RLE/bit-packed hybrid encoding; throws when `bytes` runs out.
// Exposed for tests and the fuzz target.
void decode_rle_hybrid(std::span<const uint8_t> bytes, int bit_width, size_t count, uint32_t* out,
                       const std::string& file, const std::string& where);

}  // namespace sft::data
