// Page decompression for the codecs Parquet writers use by default: UNCOMPRESSED, SNAPPY,
// GZIP (zlib) and ZSTD (Debian's libsnappy, zlib, libzstd). The output must be exactly the
// size the page header declares; anything else is a ParquetError naming file and column.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace sft::data {

struct DecompressedPage {
  std::unique_ptr<uint8_t[]> owned;  // null when the page was stored uncompressed
  std::span<const uint8_t> bytes;
};

// `codec` is Parquet's CompressionCodec number. `where` names file and column for errors.
DecompressedPage decompress_page(int32_t codec, std::span<const uint8_t> input,
                                 size_t uncompressed_size, const std::string& file,
                                 const std::string& where);

}  // namespace sft::data
