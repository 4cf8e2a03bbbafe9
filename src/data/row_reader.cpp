#include "data/row_reader.h"

#include <filesystem>
#include <optional>

#include "data/parquet_reader.h"
#include "io/mapped_file.h"

namespace sft::data {

namespace {

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

void read_jsonl_text(std::string_view text, const std::string& path, RowErrors& errors,
                     const RowVisitor& visit) {
  uint64_t line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty()) continue;
    RowRef where{&path, line_no, true};
    RowJson row;
    try {
      row = parse_ordered_json_strict(line, "data", path);
    } catch (const JsonError& e) {
      bool utf8 = e.kind() == JsonError::Kind::kInvalidUtf8;
      std::string detail = e.detail();
      // One line is one JSON text: its "line 1, " says nothing the place does not.
      if (detail.rfind("line 1, ", 0) == 0) detail.erase(0, 8);
      errors.report(utf8 ? RowProblem::kInvalidUtf8 : RowProblem::kNotJson, where,
                    (utf8 ? "invalid UTF-8 at " : "not valid JSON: ") + detail);
      continue;
    }
    if (!row.is_object()) {
      errors.report(RowProblem::kNotObject, where,
                    "expected a JSON object per line, got " + json_type_name(row));
      continue;
    }
    visit(std::move(row), where);
  }
}

void read_json_text(std::string_view text, const std::string& path, RowErrors& errors,
                    const RowVisitor& visit) {
  RowJson doc;
  try {
    doc = parse_ordered_json_strict(text, "data", path);
  } catch (const JsonError& e) {
    // datasets reads JSON Lines from .json files too; a syntax error past the first line is
    // the sign of one.
    std::string_view first = text.substr(0, text.find('\n'));
    bool multi_line = text.find('\n') != std::string_view::npos && trim(first).size() > 0 &&
                      trim(first).front() == '{';
    if (e.kind() == JsonError::Kind::kSyntax && multi_line)
      return read_jsonl_text(text, path, errors, visit);
    throw;
  }
  const RowJson* rows = &doc;
  if (doc.is_object()) {
    rows = nullptr;
    if (doc.size() == 1 && doc.begin()->is_array()) rows = &*doc.begin();
    if (rows == nullptr)
      fail_in_file("data", {path, ""}, "a JSON object is not a list of rows",
                   "a .json dataset is an array of objects, or an object with one array "
                   "member such as {\"data\": [...]}");
  }
  if (!rows->is_array())
    fail_in_file("data", {path, ""}, "expected an array of rows, got " + json_type_name(*rows),
                 "a .json dataset is an array of objects");
  uint64_t index = 0;
  for (const RowJson& row : *rows) {
    RowRef where{&path, index++, false};
    if (!row.is_object()) {
      errors.report(RowProblem::kNotObject, where,
                    "expected a JSON object, got " + json_type_name(row));
      continue;
    }
    visit(RowJson(row), where);
  }
}

}  // namespace

FileFormat file_format_of(const std::string& path) {
  std::string ext = lower_extension(path);
  if (ext == ".jsonl" || ext == ".ndjson") return FileFormat::kJsonl;
  if (ext == ".json") return FileFormat::kJson;
  if (ext == ".parquet") return FileFormat::kParquet;
  fail("data",
       "'" + path + "' is not a dataset file sft can read (hint: use .jsonl, .json or .parquet)");
}

void read_rows_from_text(std::string_view text, FileFormat format, const std::string& name,
                         RowErrors& errors, const RowVisitor& visit) {
  if (format == FileFormat::kParquet)
    fail("data", name + ": Parquet is read from a file, not from text");
  if (format == FileFormat::kJsonl) return read_jsonl_text(text, name, errors, visit);
  read_json_text(text, name, errors, visit);
}

void read_rows(const std::string& path, RowErrors& errors, const RowVisitor& visit) {
  read_rows(std::vector<std::string>{path}, errors, visit);
}

void read_rows(const std::vector<std::string>& paths, RowErrors& errors, const RowVisitor& visit) {
  std::optional<std::string> first_schema;
  std::string first_parquet;
  for (const std::string& path : paths) {
    switch (file_format_of(path)) {
      case FileFormat::kJsonl:
      case FileFormat::kJson: {
        auto mapping = MappedFile::open(path);
        std::string_view text(reinterpret_cast<const char*>(mapping->bytes().data()),
                              mapping->size());
        read_rows_from_text(text, file_format_of(path), path, errors, visit);
        break;
      }
      case FileFormat::kParquet: {
        ParquetFile file = ParquetFile::open(path);
        if (!first_schema) {
          first_schema = file.schema_signature();
          first_parquet = path;
        } else if (file.schema_signature() != *first_schema) {
          // Counted per row: the whole file is unusable with the others.
          errors.report(RowProblem::kSchemaChanged, RowRef{&path, 0, false},
                        "this file's schema (" + file.schema_signature() +
                            ") differs from that of " + first_parquet + " (" + *first_schema + ")",
                        uint64_t(file.num_rows()));
          break;
        }
        file.for_each_row([&](RowJson&& row, uint64_t index) {
          visit(std::move(row), RowRef{&path, index, false});
        });
        break;
      }
    }
  }
}

std::vector<RowJson> read_all_rows(const std::vector<std::string>& paths, RowErrors& errors) {
  std::vector<RowJson> rows;
  read_rows(paths, errors, [&](RowJson&& row, const RowRef&) { rows.push_back(std::move(row)); });
  return rows;
}

}  // namespace sft::data
