// Reading dataset files into rows: JSON objects, whatever the file format.
//
//   .jsonl / .ndjson   one object per line (blank lines ignored); places are "line N"
//   .json              a top-level array of objects, or an object with one array member
//                      ({"data": [...]}, datasets' `field`); a file of JSON Lines named
//                      .json is read as JSON Lines, as datasets does; places are "row N"
//   .parquet           see parquet_reader.h; places are "row N" across row groups
//
// Bad rows go through RowErrors (an error, or skipped and counted). A whole-file problem (a
// missing file, a corrupt Parquet footer) is always an error. Several files are read in the
// given order; Parquet files must all have the first one's schema.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "data/row_errors.h"
#include "data/row_json.h"

namespace sft::data {

using RowVisitor = std::function<void(RowJson&& row, const RowRef& where)>;

enum class FileFormat { kJsonl, kJson, kParquet };

// From the extension; throws "[data] ..." for anything else.
FileFormat file_format_of(const std::string& path);

void read_rows(const std::string& path, RowErrors& errors, const RowVisitor& visit);
// JSON Lines or JSON already in memory (`name` stands for the file in messages).
void read_rows_from_text(std::string_view text, FileFormat format, const std::string& name,
                         RowErrors& errors, const RowVisitor& visit);
void read_rows(const std::vector<std::string>& paths, RowErrors& errors, const RowVisitor& visit);

// Convenience for tests and small datasets: every row in memory.
std::vector<RowJson> read_all_rows(const std::vector<std::string>& paths, RowErrors& errors);

}  // namespace sft::data
