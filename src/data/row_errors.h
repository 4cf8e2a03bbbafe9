// The policy for rows a dataset cannot use (bad JSON, missing fields, wrong types, unknown
// roles, invalid UTF-8, a file whose schema differs from the others).
//
// By default the first such row is an error naming file, line/row and reason; with
// skip_invalid_rows (--skip_invalid_rows) the row is skipped and counted per reason, and the
// counts are reported. Nothing is dropped without being counted.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace sft::data {

enum class RowProblem {
  kNotJson,        // a JSONL line that does not parse
  kInvalidUtf8,    // a string that is not valid UTF-8
  kNotObject,      // a row that is not a JSON object
  kMissingField,   // the format's field is absent (or null)
  kWrongType,      // a field of the wrong JSON type
  kUnknownRole,    // a message role outside system/user/assistant/tool (after mapping)
  kEmptyMessages,  // a conversation with no messages
  kSchemaChanged,  // a Parquet file whose schema differs from the first file's
  kCount,
};

// Stable snake_case names ("not_json", "missing_field", ...) for reports.
const char* row_problem_name(RowProblem problem);

// Where a row is: "<file>: line N" (JSONL, 1-based) or "<file>: row N" (JSON / Parquet,
// 0-based, as datasets indexes it). It borrows the file name: valid during the visit only
// (copy location() to keep it).
struct RowRef {
  const std::string* file = nullptr;
  uint64_t number = 0;
  bool is_line = false;

  FileLocation location() const;
};

class RowErrors {
 public:
  explicit RowErrors(bool skip_invalid_rows) : skip_(skip_invalid_rows) {}

  bool skipping() const { return skip_; }
  // Throws sft::Error("[data] <file>: <place>: <problem> (hint: ...)") unless skipping;
  // then counts `rows` rows under `problem`.
  void report(RowProblem problem, const RowRef& where, std::string_view message, uint64_t rows = 1);

  uint64_t count(RowProblem problem) const { return counts_[static_cast<size_t>(problem)]; }
  uint64_t total() const;
  // "skipped 3 invalid rows: 2 not_json, 1 missing_field" or "" when none were skipped.
  std::string summary() const;

 private:
  bool skip_;
  std::array<uint64_t, static_cast<size_t>(RowProblem::kCount)> counts_{};
};

}  // namespace sft::data
