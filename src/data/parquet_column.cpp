#include "data/parquet_column.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "data/parquet_codec.h"
#include "data/parquet_thrift.h"

namespace sft::data {

namespace {

// Writers cap pages far below this (Arrow: 20k rows, 1 MiB); a larger count is a corrupt
// header and would only make us allocate for it.
constexpr size_t kMaxPageValues = size_t{1} << 22;

int bit_width_of(int max_level) {
  return max_level == 0 ? 0 : std::bit_width(unsigned(max_level));
}

struct Cursor {
  std::span<const uint8_t> bytes;
  size_t pos = 0;
  const std::string& file;
  const std::string& where;

  size_t left() const { return bytes.size() - pos; }
  std::span<const uint8_t> take(size_t n, const char* what) {
    if (n > left())
      fail_parquet(file, where,
                   std::string("truncated page: ") + what + " needs " + std::to_string(n) +
                       " bytes, " + std::to_string(left()) + " left");
    auto out = bytes.subspan(pos, n);
    pos += n;
    return out;
  }
  uint32_t u32(const char* what) {
    auto b = take(4, what);
    uint32_t v;
    std::memcpy(&v, b.data(), 4);
    return v;
  }
};

uint64_t read_uleb(std::span<const uint8_t> b, size_t& pos, const std::string& file,
                   const std::string& where) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= b.size()) fail_parquet(file, where, "truncated RLE run header");
    uint8_t byte = b[pos++];
    v |= uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return v;
  }
  fail_parquet(file, where, "RLE run header longer than 10 bytes");
}

uint32_t unpack_bits(std::span<const uint8_t> b, uint64_t bit, int width) {
  size_t byte = bit >> 3;
  uint64_t word = 0;
  std::memcpy(&word, b.data() + byte, std::min<size_t>(8, b.size() - byte));
  return static_cast<uint32_t>((word >> (bit & 7)) & ((uint64_t{1} << width) - 1));
}

// Levels: v1 pages prefix them with a u32 byte length; v2 pages give the length in the header.
std::vector<uint16_t> decode_levels(std::span<const uint8_t> bytes, int max_level, size_t count,
                                    const std::string& file, const std::string& where,
                                    const char* kind) {
  std::vector<uint32_t> raw(count);
  decode_rle_hybrid(bytes, bit_width_of(max_level), count, raw.data(), file, where);
  std::vector<uint16_t> out(count);
  for (size_t i = 0; i < count; ++i) {
    if (raw[i] > uint32_t(max_level))
      fail_parquet(file, where,
                   std::string(kind) + " level " + std::to_string(raw[i]) +
                       " exceeds the schema's maximum " + std::to_string(max_level));
    out[i] = static_cast<uint16_t>(raw[i]);
  }
  return out;
}

RowJson to_json_int(int64_t v, const LeafColumn& leaf) {
  if (leaf.annotation == Annotation::kUnsignedInt) {
    if (leaf.type == PhysicalType::kInt32) return RowJson(uint64_t(uint32_t(v)));
    return RowJson(uint64_t(v));
  }
  return RowJson(v);
}

// Appends `n` PLAIN-encoded values from `c` to `out`.
void decode_plain(Cursor& c, const LeafColumn& leaf, size_t n, std::vector<RowJson>& out) {
  switch (leaf.type) {
    case PhysicalType::kBoolean: {
      auto b = c.take((n + 7) / 8, "PLAIN booleans");
      for (size_t i = 0; i < n; ++i) out.emplace_back(bool((b[i / 8] >> (i % 8)) & 1));
      return;
    }
    case PhysicalType::kInt32:
      for (size_t i = 0; i < n; ++i)
        out.push_back(to_json_int(int32_t(c.u32("INT32 value")), leaf));
      return;
    case PhysicalType::kInt64: {
      auto b = c.take(n * 8, "INT64 values");
      for (size_t i = 0; i < n; ++i) {
        int64_t v;
        std::memcpy(&v, b.data() + 8 * i, 8);
        out.push_back(to_json_int(v, leaf));
      }
      return;
    }
    case PhysicalType::kFloat: {
      auto b = c.take(n * 4, "FLOAT values");
      for (size_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, b.data() + 4 * i, 4);
        out.emplace_back(double(v));
      }
      return;
    }
    case PhysicalType::kDouble: {
      auto b = c.take(n * 8, "DOUBLE values");
      for (size_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, b.data() + 8 * i, 8);
        out.emplace_back(v);
      }
      return;
    }
    case PhysicalType::kByteArray:
      for (size_t i = 0; i < n; ++i) {
        uint32_t len = c.u32("BYTE_ARRAY length");
        auto s = c.take(len, "BYTE_ARRAY value");
        out.emplace_back(std::string(reinterpret_cast<const char*>(s.data()), s.size()));
      }
      return;
    default:
      fail_parquet(c.file, c.where, "this physical type is not supported");
  }
}

// Appends `n` values of a data page body (after the levels) in `encoding`.
void decode_values(Cursor& c, int32_t encoding, const LeafColumn& leaf, size_t n,
                   const std::vector<RowJson>* dictionary, std::vector<RowJson>& out) {
  if (n == 0) return;
  if (encoding == 0) return decode_plain(c, leaf, n, out);
  if (encoding == 2 || encoding == 8) {
    if (dictionary == nullptr)
      fail_parquet(c.file, c.where, "dictionary-encoded page without a dictionary page");
    int width = c.take(1, "dictionary index bit width")[0];
    if (width > 32) fail_parquet(c.file, c.where, "dictionary index bit width over 32");
    std::vector<uint32_t> idx(n);
    decode_rle_hybrid(c.bytes.subspan(c.pos), width, n, idx.data(), c.file, c.where);
    for (uint32_t i : idx) {
      if (i >= dictionary->size())
        fail_parquet(c.file, c.where,
                     "dictionary index " + std::to_string(i) + " out of range (" +
                         std::to_string(dictionary->size()) + " entries)");
      out.push_back((*dictionary)[i]);
    }
    return;
  }
  if (encoding == 3 && leaf.type == PhysicalType::kBoolean) {
    uint32_t len = c.u32("RLE boolean length");
    auto b = c.take(len, "RLE booleans");
    std::vector<uint32_t> bits(n);
    decode_rle_hybrid(b, 1, n, bits.data(), c.file, c.where);
    for (uint32_t v : bits) out.emplace_back(v != 0);
    return;
  }
  fail_parquet(c.file, c.where,
               std::string("value encoding ") + encoding_name(encoding) +
                   " is not supported (hint: write the file with pyarrow's default encodings, "
                   "e.g. column_encoding left unset)");
}

}  // namespace

void decode_rle_hybrid(std::span<const uint8_t> bytes, int bit_width, size_t count, uint32_t* out,
                       const std::string& file, const std::string& where) {
  if (bit_width < 0 || bit_width > 32) fail_parquet(file, where, "RLE bit width over 32");
  size_t pos = 0, produced = 0;
  const size_t value_bytes = (bit_width + 7) / 8;
  while (produced < count) {
    uint64_t header = read_uleb(bytes, pos, file, where);
    uint64_t runs = header >> 1;
    size_t want = count - produced;
    if (header & 1) {  // bit-packed: runs groups of 8 values, runs * bit_width bytes
      if (runs > (uint64_t{1} << 40)) fail_parquet(file, where, "bit-packed run too long");
      uint64_t n = runs * 8;
      size_t nbytes = std::min<uint64_t>(runs * bit_width, bytes.size() - pos);
      size_t take = std::min<uint64_t>(n, want);
      if (bit_width > 0 && take * bit_width > nbytes * 8)
        fail_parquet(file, where, "truncated bit-packed run");
      auto run = bytes.subspan(pos, nbytes);
      for (size_t i = 0; i < take; ++i)
        out[produced + i] =
            bit_width == 0 ? 0 : unpack_bits(run, uint64_t(i) * bit_width, bit_width);
      produced += take;
      pos += nbytes;
    } else {  // RLE: one value repeated `runs` times
      if (runs == 0) fail_parquet(file, where, "empty RLE run");
      if (value_bytes > bytes.size() - pos) fail_parquet(file, where, "truncated RLE run value");
      uint32_t v = 0;
      std::memcpy(&v, bytes.data() + pos, value_bytes);
      pos += value_bytes;
      if (bit_width < 32 && v >> bit_width)
        fail_parquet(file, where, "RLE value wider than its bit width");
      size_t take = std::min<uint64_t>(runs, want);
      std::fill(out + produced, out + produced + take, v);
      produced += take;
    }
  }
}

ColumnValues read_column_chunk(std::span<const uint8_t> file_bytes, const ColumnChunkMeta& meta,
                               const LeafColumn& leaf, const std::string& file) {
  const std::string where = "column '" + leaf.name + "'";
  if (meta.external)
    fail_parquet(file, where, "column chunks stored in another file are not supported");
  int64_t start = meta.data_page_offset;
  if (meta.dictionary_page_offset && *meta.dictionary_page_offset > 0 &&
      *meta.dictionary_page_offset < start)
    start = *meta.dictionary_page_offset;
  const int64_t data_end = int64_t(file_bytes.size()) - 8;  // the footer length + magic
  if (start < 4 || start >= data_end || meta.total_compressed_size <= 0 ||
      meta.total_compressed_size > data_end - start)
    fail_parquet(file, where, "column chunk offsets lie outside the file");
  if (meta.num_values < 0) fail_parquet(file, where, "negative value count");
  auto chunk = file_bytes.subspan(start, meta.total_compressed_size);

  ColumnValues out;
  std::vector<RowJson> dictionary;
  bool has_dictionary = false;
  size_t pos = 0;
  while (out.num_levels < uint64_t(meta.num_values)) {
    if (pos >= chunk.size())
      fail_parquet(file, where,
                   "column chunk ends after " + std::to_string(out.num_levels) + " of " +
                       std::to_string(meta.num_values) + " values");
    PageHeader h = parse_page_header(chunk.subspan(pos), file, leaf.name);
    if (size_t(h.compressed_size) > chunk.size() - pos - h.header_size)
      fail_parquet(file, where, "page runs past the end of the column chunk");
    auto body = chunk.subspan(pos + h.header_size, h.compressed_size);
    pos += h.header_size + h.compressed_size;
    if (size_t(h.num_values) > kMaxPageValues)
      fail_parquet(file, where, "page claims " + std::to_string(h.num_values) + " values");

    if (h.type == PageType::kDictionaryPage) {
      if (has_dictionary) fail_parquet(file, where, "second dictionary page in one column chunk");
      if (h.encoding != 0 && h.encoding != 2)
        fail_parquet(file, where,
                     std::string("dictionary page encoding ") + encoding_name(h.encoding) +
                         " is not supported");
      auto page = decompress_page(meta.codec, body, h.uncompressed_size, file, where);
      Cursor c{page.bytes, 0, file, where};
      dictionary.reserve(std::min<size_t>(h.num_values, page.bytes.size() + 1));
      decode_plain(c, leaf, h.num_values, dictionary);
      has_dictionary = true;
      continue;
    }
    if (h.type != PageType::kDataPage && h.type != PageType::kDataPageV2) continue;  // index

    const size_t n = h.num_values;
    if (n > uint64_t(meta.num_values) - out.num_levels)
      fail_parquet(file, where, "pages hold more values than the column chunk declares");
    DecompressedPage page;
    Cursor c{{}, 0, file, where};
    std::vector<uint16_t> rep, def;
    if (h.type == PageType::kDataPage) {
      page = decompress_page(meta.codec, body, h.uncompressed_size, file, where);
      c.bytes = page.bytes;
      for (int pass = 0; pass < 2; ++pass) {
        int max_level = pass == 0 ? leaf.max_rep : leaf.max_def;
        int encoding = pass == 0 ? h.rep_level_encoding : h.def_level_encoding;
        if (max_level == 0) continue;
        if (encoding != 3)
          fail_parquet(file, where,
                       std::string("level encoding ") + encoding_name(encoding) +
                           " is not supported (only RLE)");
        uint32_t len = c.u32("level length");
        auto levels = decode_levels(c.take(len, "levels"), max_level, n, file, where,
                                    pass == 0 ? "repetition" : "definition");
        (pass == 0 ? rep : def) = std::move(levels);
      }
    } else {
      size_t rl = h.rep_levels_byte_length, dl = h.def_levels_byte_length;
      if (rl + dl > body.size()) fail_parquet(file, where, "level lengths exceed the page");
      if (leaf.max_rep > 0)
        rep = decode_levels(body.subspan(0, rl), leaf.max_rep, n, file, where, "repetition");
      if (leaf.max_def > 0)
        def = decode_levels(body.subspan(rl, dl), leaf.max_def, n, file, where, "definition");
      auto values = body.subspan(rl + dl);
      if (size_t(h.uncompressed_size) < rl + dl)
        fail_parquet(file, where, "page smaller than its levels");
      if (h.is_compressed && meta.codec != 0) {
        page = decompress_page(meta.codec, values, h.uncompressed_size - rl - dl, file, where);
        c.bytes = page.bytes;
      } else {
        c.bytes = values;
      }
    }
    if (!rep.empty() && out.num_levels == 0 && rep[0] != 0)
      fail_parquet(file, where, "the first value of a column chunk does not start a row");
    size_t non_null = def.empty() ? n : size_t(std::count(def.begin(), def.end(), leaf.max_def));
    decode_values(c, h.encoding, leaf, non_null, has_dictionary ? &dictionary : nullptr,
                  out.values);
    out.rep.insert(out.rep.end(), rep.begin(), rep.end());
    out.def.insert(out.def.end(), def.begin(), def.end());
    out.num_levels += n;
  }
  return out;
}

}  // namespace sft::data
