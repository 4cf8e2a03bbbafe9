// Fuzz target: any bytes read as a JSON Lines file and as a JSON file, each row then detected
// and converted as `sft train` does (column mapping, format detection, typed examples) — must
// either yield rows or raise sft::Error; never crash, leak or throw anything else. Rows are
// skipped-and-counted (--skip_invalid_rows) in one pass and fatal in the other, so both
// policies are exercised, with and without a column mapping.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "data/format.h"
#include "data/row_reader.h"

namespace {

void read_as(std::string_view text, sft::data::FileFormat file_format, bool skip, bool mapped) {
  static const std::string name = "fuzz";
  sft::data::FormatOptions options;
  if (mapped) options.columns = {{"prompt", "question"}};
  sft::data::RowErrors errors(skip);
  std::optional<sft::data::DetectedFormat> format;
  try {
    sft::data::read_rows_from_text(
        text, file_format, name, errors,
        [&](sft::data::RowJson&& row, const sft::data::RowRef& where) {
          if (!sft::data::apply_column_mapping(row, options, where, errors)) return;
          if (!format) format = sft::data::detect_format(row, options, where);
          (void)sft::data::to_example(std::move(row), *format, options, where, errors);
        });
    (void)errors.summary();
  } catch (const sft::Error&) {
    // A clear error naming the place: the expected outcome for most inputs.
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool skip : {false, true}) {
    for (bool mapped : {false, true}) {
      read_as(text, sft::data::FileFormat::kJsonl, skip, mapped);
      read_as(text, sft::data::FileFormat::kJson, skip, mapped);
    }
  }
  return 0;
}
