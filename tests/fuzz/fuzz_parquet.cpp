// Fuzz target: any byte string handed to the Parquet reader (footer, Thrift metadata, page
// headers, levels, values, codecs, row assembly) must either read or raise ParquetError —
// never crash, hang, leak, read out of bounds or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "data/parquet_reader.h"
#include "data/parquet_thrift.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto file = sft::data::ParquetFile::from_bytes(std::span<const uint8_t>(data, size), "fuzz");
    uint64_t rows = 0;
    for (size_t g = 0; g < file.num_row_groups(); ++g) {
      for (const auto& row : file.read_row_group(g)) {
        if (!row.is_object()) std::abort();  // every row is an object
        ++rows;
      }
    }
    if (rows != uint64_t(file.num_rows())) std::abort();  // the footer's count was checked
  } catch (const sft::data::ParquetError&) {
    // Rejected with a clear error: the expected outcome for most inputs.
  }
  return 0;
}
