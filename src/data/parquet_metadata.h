// Parquet file metadata: the footer (FileMetaData) and page headers, decoded from Thrift
// into plain structs holding only what the reader uses; everything else is skipped.
//
// Layout of a file: "PAR1" <column chunks> <FileMetaData> <u32 footer length> "PAR1".
// The schema comes as a flattened depth-first list of SchemaElements (num_children says
// where a group's children end); build_schema_tree turns it into a tree and checks it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sft::data {

enum class PhysicalType : int32_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixedLenByteArray = 7,
};
enum class Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };

// What the annotations (ConvertedType or LogicalType) say a column means, reduced to the
// cases the reader distinguishes.
enum class Annotation {
  kNone,
  kString,  // UTF8 / STRING / JSON / ENUM: BYTE_ARRAY holding UTF-8 text
  kList,
  kMap,
  kSignedInt,    // INT_8..INT_64 or INTEGER(signed)
  kUnsignedInt,  // UINT_8..UINT_64 or INTEGER(unsigned)
  kDate,
  kOther,  // decimal, time, timestamp, uuid, float16, ... (read as unsupported)
};

struct SchemaElement {
  std::string name;
  std::optional<PhysicalType> type;  // absent for groups
  Repetition repetition = Repetition::kRequired;
  int32_t num_children = 0;
  Annotation annotation = Annotation::kNone;
  std::string annotation_name;  // for "unsupported X" errors
};

struct ColumnChunkMeta {
  PhysicalType type = PhysicalType::kBoolean;
  std::vector<std::string> path;
  int32_t codec = 0;
  int64_t num_values = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;
  bool external = false;  // file_path set: the chunk lives in another file
};

struct RowGroupMeta {
  int64_t num_rows = 0;
  std::vector<ColumnChunkMeta> columns;
};

struct FileMetaData {
  std::vector<SchemaElement> schema;
  int64_t num_rows = 0;
  std::vector<RowGroupMeta> row_groups;
  std::string created_by;
};

enum class PageType : int32_t {
  kDataPage = 0,
  kIndexPage = 1,
  kDictionaryPage = 2,
  kDataPageV2 = 3
};

struct PageHeader {
  PageType type = PageType::kDataPage;
  int32_t uncompressed_size = 0;
  int32_t compressed_size = 0;
  int32_t num_values = 0;
  int32_t encoding = 0;
  int32_t def_level_encoding = 3;  // v1 only
  int32_t rep_level_encoding = 3;  // v1 only
  // v2 only
  int32_t num_nulls = 0;
  int32_t num_rows = 0;
  int32_t def_levels_byte_length = 0;
  int32_t rep_levels_byte_length = 0;
  bool is_compressed = true;
  size_t header_size = 0;  // bytes the Thrift header itself took
};

// Parses the footer of a whole file held in memory. Throws ParquetError naming `file`.
FileMetaData parse_file_metadata(std::span<const uint8_t> file_bytes, const std::string& file);

// Parses one page header at the start of `bytes`.
PageHeader parse_page_header(std::span<const uint8_t> bytes, const std::string& file,
                             const std::string& column);

const char* codec_name(int32_t codec);
const char* encoding_name(int32_t encoding);

}  // namespace sft::data
