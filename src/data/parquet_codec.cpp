#include "data/parquet_codec.h"

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "data/parquet_metadata.h"
#include "data/parquet_thrift.h"

namespace sft::data {

namespace {

// No page we will meet is anywhere near this; the cap keeps a corrupt header from asking
// for an absurd allocation.
constexpr size_t kMaxPageBytes = size_t{1} << 30;

bool gunzip(std::span<const uint8_t> in, uint8_t* out, size_t out_size) {
  z_stream zs{};
  // 15 + 32: accept gzip or zlib headers (writers differ), detected automatically.
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return false;
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out;
  zs.avail_out = static_cast<uInt>(out_size);
  int rc = inflate(&zs, Z_FINISH);
  size_t produced = zs.total_out;
  inflateEnd(&zs);
  return rc == Z_STREAM_END && produced == out_size;
}

}  // namespace

DecompressedPage decompress_page(int32_t codec, std::span<const uint8_t> input,
                                 size_t uncompressed_size, const std::string& file,
                                 const std::string& where) {
  DecompressedPage page;
  if (codec == 0) {
    if (input.size() != uncompressed_size)
      fail_parquet(file, where,
                   "uncompressed page size " + std::to_string(input.size()) +
                       " differs from the header's " + std::to_string(uncompressed_size));
    page.bytes = input;
    return page;
  }
  if (uncompressed_size > kMaxPageBytes)
    fail_parquet(file, where,
                 "page claims " + std::to_string(uncompressed_size) +
                     " bytes uncompressed, more than the 1 GiB limit");
  page.owned.reset(new uint8_t[uncompressed_size == 0 ? 1 : uncompressed_size]);
  uint8_t* out = page.owned.get();
  bool ok = false;
  switch (codec) {
    case 1: {
      size_t n = 0;
      auto* src = reinterpret_cast<const char*>(input.data());
      ok = snappy_uncompressed_length(src, input.size(), &n) == SNAPPY_OK &&
           n == uncompressed_size &&
           snappy_uncompress(src, input.size(), reinterpret_cast<char*>(out), &n) == SNAPPY_OK &&
           n == uncompressed_size;
      break;
    }
    case 2:
      ok = gunzip(input, out, uncompressed_size);
      break;
    case 6: {
      size_t n = ZSTD_decompress(out, uncompressed_size, input.data(), input.size());
      ok = !ZSTD_isError(n) && n == uncompressed_size;
      break;
    }
    default:
      fail_parquet(file, where,
                   std::string("compression codec ") + codec_name(codec) +
                       " is not supported (hint: rewrite the file with snappy, gzip, zstd or no "
                       "compression, e.g. pyarrow.parquet.write_table(..., compression='zstd'))");
  }
  if (!ok)
    fail_parquet(file, where,
                 std::string("corrupt ") + codec_name(codec) + " data: did not decompress to the " +
                     std::to_string(uncompressed_size) + " bytes the page header declares");
  page.bytes = {out, uncompressed_size};
  return page;
}

}  // namespace sft::data
