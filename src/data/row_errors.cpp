#include "data/row_errors.h"

namespace sft::data {

const char* row_problem_name(RowProblem problem) {
  switch (problem) {
    case RowProblem::kNotJson:
      return "not_json";
    case RowProblem::kInvalidUtf8:
      return "invalid_utf8";
    case RowProblem::kNotObject:
      return "not_object";
    case RowProblem::kMissingField:
      return "missing_field";
    case RowProblem::kWrongType:
      return "wrong_type";
    case RowProblem::kUnknownRole:
      return "unknown_role";
    case RowProblem::kEmptyMessages:
      return "empty_messages";
    case RowProblem::kSchemaChanged:
      return "schema_changed";
    case RowProblem::kCount:
      break;
  }
  return "unknown";
}

FileLocation RowRef::location() const {
  return {file ? *file : std::string("<memory>"),
          (is_line ? "line " : "row ") + std::to_string(number)};
}

void RowErrors::report(RowProblem problem, const RowRef& where, std::string_view message,
                       uint64_t rows) {
  if (!skip_) {
    fail_in_file("data", where.location(), message,
                 "fix the row, or pass --skip_invalid_rows to skip such rows (they are counted "
                 "and reported)");
  }
  counts_[static_cast<size_t>(problem)] += rows;
}

uint64_t RowErrors::total() const {
  uint64_t n = 0;
  for (uint64_t c : counts_) n += c;
  return n;
}

std::string RowErrors::summary() const {
  if (total() == 0) return "";
  std::string out = "skipped " + std::to_string(total()) + " invalid rows:";
  bool first = true;
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] == 0) continue;
    out += (first ? " " : ", ") + std::to_string(counts_[i]) + " " +
           row_problem_name(static_cast<RowProblem>(i));
    first = false;
  }
  return out;
}

}  // namespace sft::data
