#include "data/parquet_metadata.h"

#include <cstring>

#include "data/parquet_thrift.h"

namespace sft::data {

namespace {

using T = ThriftType;

Annotation from_converted_type(int32_t c, std::string& name) {
  static const char* const kNames[] = {"UTF8",
                                       "MAP",
                                       "MAP_KEY_VALUE",
                                       "LIST",
                                       "ENUM",
                                       "DECIMAL",
                                       "DATE",
                                       "TIME_MILLIS",
                                       "TIME_MICROS",
                                       "TIMESTAMP_MILLIS",
                                       "TIMESTAMP_MICROS",
                                       "UINT_8",
                                       "UINT_16",
                                       "UINT_32",
                                       "UINT_64",
                                       "INT_8",
                                       "INT_16",
                                       "INT_32",
                                       "INT_64",
                                       "JSON",
                                       "BSON",
                                       "INTERVAL"};
  name = c >= 0 && c < 22 ? kNames[c] : "converted type " + std::to_string(c);
  switch (c) {
    case 0:
    case 4:
    case 19:
      return Annotation::kString;
    case 1:
    case 2:
      return Annotation::kMap;
    case 3:
      return Annotation::kList;
    case 6:
      return Annotation::kDate;
    case 11:
    case 12:
    case 13:
    case 14:
      return Annotation::kUnsignedInt;
    case 15:
    case 16:
    case 17:
    case 18:
      return Annotation::kSignedInt;
    default:
      return Annotation::kOther;
  }
}

// LogicalType is a Thrift union: exactly one field set, each an (often empty) struct.
Annotation read_logical_type(ThriftReader& r, std::string& name) {
  Annotation out = Annotation::kOther;
  r.begin_struct();
  for (auto f = r.next_field(); f.type != T::kStop; f = r.next_field()) {
    if (f.id == 10 && f.type == T::kStruct) {  // INTEGER {1: bitWidth byte, 2: isSigned bool}
      bool is_signed = true;
      r.begin_struct();
      for (auto g = r.next_field(); g.type != T::kStop; g = r.next_field()) {
        if (g.id == 2) {
          is_signed = r.read_bool(g);
        } else {
          r.skip(g.type);  // bitWidth: the JSON value does not depend on it
        }
      }
      r.end_struct();
      out = is_signed ? Annotation::kSignedInt : Annotation::kUnsignedInt;
      name = is_signed ? "INTEGER(signed)" : "INTEGER(unsigned)";
      continue;
    }
    r.skip(f.type);
    switch (f.id) {
      case 1:
        out = Annotation::kString, name = "STRING";
        break;
      case 2:
        out = Annotation::kMap, name = "MAP";
        break;
      case 3:
        out = Annotation::kList, name = "LIST";
        break;
      case 4:
        out = Annotation::kString, name = "ENUM";
        break;
      case 5:
        name = "DECIMAL";
        break;
      case 6:
        out = Annotation::kDate, name = "DATE";
        break;
      case 7:
        name = "TIME";
        break;
      case 8:
        name = "TIMESTAMP";
        break;
      case 11:
        out = Annotation::kNone, name = "NULL";
        break;
      case 12:
        out = Annotation::kString, name = "JSON";
        break;
      case 13:
        name = "BSON";
        break;
      case 14:
        name = "UUID";
        break;
      case 15:
        name = "FLOAT16";
        break;
      default:
        name = "logical type " + std::to_string(f.id);
        break;
    }
  }
  r.end_struct();
  return out;
}

SchemaElement read_schema_element(ThriftReader& r) {
  SchemaElement e;
  bool has_logical = false;
  r.begin_struct();
  for (auto f = r.next_field(); f.type != T::kStop; f = r.next_field()) {
    switch (f.id) {
      case 1:
        r.expect(f, T::kI32, "type");
        e.type = static_cast<PhysicalType>(r.read_i32());
        break;
      case 3:
        r.expect(f, T::kI32, "repetition_type");
        e.repetition = static_cast<Repetition>(r.read_i32());
        break;
      case 4:
        r.expect(f, T::kBinary, "name");
        e.name = r.read_string();
        break;
      case 5:
        r.expect(f, T::kI32, "num_children");
        e.num_children = r.read_i32();
        break;
      case 6:
        r.expect(f, T::kI32, "converted_type");
        if (!has_logical) {
          e.annotation = from_converted_type(r.read_i32(), e.annotation_name);
        } else {
          r.read_i32();
        }
        break;
      case 10:
        r.expect(f, T::kStruct, "logicalType");
        e.annotation = read_logical_type(r, e.annotation_name);
        has_logical = true;
        break;
      default:
        r.skip(f.type);
    }
  }
  r.end_struct();
  if (e.type && (static_cast<int32_t>(*e.type) < 0 || static_cast<int32_t>(*e.type) > 7))
    r.fail("unknown physical type " + std::to_string(static_cast<int32_t>(*e.type)));
  if (static_cast<int32_t>(e.repetition) < 0 || static_cast<int32_t>(e.repetition) > 2)
    r.fail("unknown repetition type");
  return e;
}

ColumnChunkMeta read_column_meta(ThriftReader& r) {
  ColumnChunkMeta c;
  r.begin_struct();
  for (auto f = r.next_field(); f.type != T::kStop; f = r.next_field()) {
    switch (f.id) {
      case 1:
        r.expect(f, T::kI32, "type");
        c.type = static_cast<PhysicalType>(r.read_i32());
        break;
      case 3: {
        r.expect(f, T::kList, "path_in_schema");
        auto [elem, n] = r.read_list_header();
        if (elem != T::kBinary) r.fail("path_in_schema is not a list of strings");
        for (uint32_t i = 0; i < n; ++i) c.path.push_back(r.read_string());
        break;
      }
      case 4:
        r.expect(f, T::kI32, "codec");
        c.codec = r.read_i32();
        break;
      case 5:
        r.expect(f, T::kI64, "num_values");
        c.num_values = r.read_i64();
        break;
      case 7:
        r.expect(f, T::kI64, "total_compressed_size");
        c.total_compressed_size = r.read_i64();
        break;
      case 9:
        r.expect(f, T::kI64, "data_page_offset");
        c.data_page_offset = r.read_i64();
        break;
      case 11:
        r.expect(f, T::kI64, "dictionary_page_offset");
        c.dictionary_page_offset = r.read_i64();
        break;
      default:
        r.skip(f.type);
    }
  }
  r.end_struct();
  return c;
}

ColumnChunkMeta read_column_chunk(ThriftReader& r) {
  ColumnChunkMeta c;
  bool has_meta = false, external = false;
  r.begin_struct();
  for (auto f = r.next_field(); f.type != T::kStop; f = r.next_field()) {
    if (f.id == 1 && f.type == T::kBinary) {
      external = !r.read_binary().empty();
    } else if (f.id == 3) {
      r.expect(f, T::kStruct, "meta_data");
      c = read_column_meta(r);
      has_meta = true;
    } else {
      r.skip(f.type);
    }
  }
  r.end_struct();
  if (!has_meta) r.fail("column chunk without meta_data");
  c.external = external;
  return c;
}

RowGroupMeta read_row_group(ThriftReader& r) {
  RowGroupMeta g;
  r.begin_struct();
  for (auto f = r.next_field(); f.type != T::kStop; f = r.next_field()) {
    if (f.id == 1) {
      r.expect(f, T::kList, "columns");
      auto [elem, n] = r.read_list_header();
      if (elem != T::kStruct) r.fail("row group columns are not structs");
      for (uint32_t i = 0; i < n; ++i) g.columns.push_back(read_column_chunk(r));
    } else if (f.id == 3) {
      r.expect(f, T::kI64, "num_rows");
      g.num_rows = r.read_i64();
    } else {
      r.skip(f.type);
    }
  }
  r.end_struct();
  return g;
}

}  // namespace

FileMetaData parse_file_metadata(std::span<const uint8_t> bytes, const std::string& file) {
  constexpr size_t kMagic = 4;
  if (bytes.size() < 2 * kMagic + 4)
    fail_parquet(file, "",
                 "too small to be a Parquet file (" + std::to_string(bytes.size()) + " bytes)");
  if (std::memcmp(bytes.data(), "PAR1", 4) != 0)
    fail_parquet(file, "", "does not start with the Parquet magic 'PAR1'");
  if (std::memcmp(bytes.data() + bytes.size() - 4, "PAR1", 4) != 0) {
    if (std::memcmp(bytes.data() + bytes.size() - 4, "PARE", 4) == 0)
      fail_parquet(file, "footer", "encrypted Parquet files are not supported");
    fail_parquet(file, "", "does not end with the Parquet magic 'PAR1' (truncated file?)");
  }
  uint32_t footer_len;
  std::memcpy(&footer_len, bytes.data() + bytes.size() - 8, 4);
  if (footer_len > bytes.size() - 2 * kMagic - 4)
    fail_parquet(file, "footer",
                 "footer length " + std::to_string(footer_len) + " is larger than the file");
  auto footer = bytes.subspan(bytes.size() - 8 - footer_len, footer_len);
  ThriftReader r(footer, file, "footer");
  FileMetaData md;
  r.begin_struct();
  for (auto f = r.next_field(); f.type != T::kStop; f = r.next_field()) {
    switch (f.id) {
      case 2: {
        r.expect(f, T::kList, "schema");
        auto [elem, n] = r.read_list_header();
        if (elem != T::kStruct) r.fail("schema is not a list of structs");
        for (uint32_t i = 0; i < n; ++i) md.schema.push_back(read_schema_element(r));
        break;
      }
      case 3:
        r.expect(f, T::kI64, "num_rows");
        md.num_rows = r.read_i64();
        break;
      case 4: {
        r.expect(f, T::kList, "row_groups");
        auto [elem, n] = r.read_list_header();
        if (elem != T::kStruct) r.fail("row_groups is not a list of structs");
        for (uint32_t i = 0; i < n; ++i) md.row_groups.push_back(read_row_group(r));
        break;
      }
      case 6:
        r.expect(f, T::kBinary, "created_by");
        md.created_by = r.read_string();
        break;
      default:
        r.skip(f.type);
    }
  }
  r.end_struct();
  if (md.schema.empty()) fail_parquet(file, "footer", "the schema is empty");
  return md;
}

PageHeader parse_page_header(std::span<const uint8_t> bytes, const std::string& file,
                             const std::string& column) {
  ThriftReader r(bytes, file, "page header in column '" + column + "'");
  PageHeader h;
  bool has_sizes = false;
  r.begin_struct();
  for (auto f = r.next_field(); f.type != T::kStop; f = r.next_field()) {
    switch (f.id) {
      case 1:
        r.expect(f, T::kI32, "type");
        h.type = static_cast<PageType>(r.read_i32());
        break;
      case 2:
        r.expect(f, T::kI32, "uncompressed_page_size");
        h.uncompressed_size = r.read_i32();
        break;
      case 3:
        r.expect(f, T::kI32, "compressed_page_size");
        h.compressed_size = r.read_i32();
        has_sizes = true;
        break;
      case 5:    // DataPageHeader
      case 7:    // DictionaryPageHeader
      case 8: {  // DataPageHeaderV2
        r.expect(f, T::kStruct, "page header");
        int16_t which = f.id;
        r.begin_struct();
        for (auto g = r.next_field(); g.type != T::kStop; g = r.next_field()) {
          if (g.type == T::kI32) {
            int32_t v = r.read_i32();
            if (g.id == 1) h.num_values = v;
            if (which == 5 && g.id == 2) h.encoding = v;
            if (which == 5 && g.id == 3) h.def_level_encoding = v;
            if (which == 5 && g.id == 4) h.rep_level_encoding = v;
            if (which == 7 && g.id == 2) h.encoding = v;
            if (which == 8 && g.id == 2) h.num_nulls = v;
            if (which == 8 && g.id == 3) h.num_rows = v;
            if (which == 8 && g.id == 4) h.encoding = v;
            if (which == 8 && g.id == 5) h.def_levels_byte_length = v;
            if (which == 8 && g.id == 6) h.rep_levels_byte_length = v;
          } else if (which == 8 && g.id == 7) {
            h.is_compressed = r.read_bool(g);
          } else {
            r.skip(g.type);
          }
        }
        r.end_struct();
        break;
      }
      default:
        r.skip(f.type);
    }
  }
  r.end_struct();
  if (!has_sizes) r.fail("page header without sizes");
  if (h.compressed_size < 0 || h.uncompressed_size < 0 || h.num_values < 0 ||
      h.def_levels_byte_length < 0 || h.rep_levels_byte_length < 0)
    r.fail("negative size in page header");
  h.header_size = r.position();
  return h;
}

const char* codec_name(int32_t codec) {
  static const char* const kNames[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                       "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
  return codec >= 0 && codec < 8 ? kNames[codec] : "unknown codec";
}

const char* encoding_name(int32_t encoding) {
  static const char* const kNames[] = {
      "PLAIN",          "GROUP_VAR_INT",       "PLAIN_DICTIONARY",        "RLE",
      "BIT_PACKED",     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
      "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
  return encoding >= 0 && encoding < 10 ? kNames[encoding] : "unknown encoding";
}

}  // namespace sft::data
