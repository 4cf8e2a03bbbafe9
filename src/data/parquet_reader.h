// A focused Parquet reader: whole rows out as JSON objects, so Parquet, JSONL and JSON
// datasets share one row type.
//
// Supported: DATA_PAGE v1/v2, PLAIN and dictionary encodings, RLE/bit-packed levels,
// UNCOMPRESSED/SNAPPY/GZIP/ZSTD, nested structs and lists (the 3-level LIST layout writers
// use, the legacy 2-level one, bare repeated fields), strings, ints (signed/unsigned), floats,
// doubles, bools, dates (as day numbers) and nulls at every level, any number of row groups.
// Anything else (maps, decimals, timestamps, binary, INT96, DELTA_* encodings, LZ4, BROTLI,
// encryption) fails with "[parquet] <file>: column '<name>': <feature> is not supported".
//
// Row assembly follows Dremel: each leaf column's (repetition, definition) levels say where
// its values go; leaves sharing a list fill the same elements.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/parquet_metadata.h"
#include "data/row_json.h"

namespace sft {
class MappedFile;
}

namespace sft::data {

struct ParquetField;  // the JSON shape a schema describes (parquet_reader.cpp)

class ParquetFile {
 public:
  // Maps the file and parses footer and schema (not the data). Throws ParquetError.
  static ParquetFile open(const std::string& path);
  // Reads from bytes owned by the caller, kept alive while the object is used (fuzzing).
  static ParquetFile from_bytes(std::span<const uint8_t> bytes, const std::string& name);

  ParquetFile(ParquetFile&&) noexcept;
  ParquetFile& operator=(ParquetFile&&) noexcept;
  ~ParquetFile();

  const std::string& path() const { return name_; }
  int64_t num_rows() const { return metadata_.num_rows; }
  size_t num_row_groups() const { return metadata_.row_groups.size(); }
  // A printable schema ("source: string, messages: list<struct<content: string, ...>>"),
  // equal for files whose rows have the same shape; used to reject datasets whose files
  // disagree.
  const std::string& schema_signature() const { return signature_; }

  // Decodes one row group into rows (JSON objects, one key per top-level column).
  std::vector<RowJson> read_row_group(size_t index) const;
  // Every row in order; `row` counts from 0 across row groups.
  void for_each_row(const std::function<void(RowJson&& row, uint64_t index)>& fn) const;

 private:
  ParquetFile();
  void init();

  std::shared_ptr<const MappedFile> mapping_;
  std::span<const uint8_t> bytes_;
  std::string name_;
  FileMetaData metadata_;
  std::vector<ParquetField> top_;                             // top-level fields
  std::vector<std::vector<const ParquetField*>> leaf_paths_;  // per leaf column
  std::string signature_;
};

}  // namespace sft::data
