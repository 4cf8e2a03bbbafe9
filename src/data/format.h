// Dataset formats: detected from the first row as TRL's SFTTrainer does, then every row is
// checked and converted to a typed Example (example.h).
//
// Detection order (TRL's): `input_ids` → Tokenized; `conversations` whose first turn has
// from/value → ShareGPT, converted to messages (from→role, value→content; roles human→user,
// gpt→assistant as common tooling does — TRL itself keeps the raw role names); `prompt` →
// PromptCompletion (conversational when the prompt is a list of messages with a role);
// `messages` with a role → Conversation; otherwise the text field → Text. A column mapping
// (--dataset_columns "prompt=question,completion=answer") renames columns first.
//
// Rows that do not fit the detected format go to RowErrors with a reason (missing_field,
// wrong_type, unknown_role, empty_messages, invalid_utf8).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/example.h"
#include "data/row_errors.h"
#include "data/row_reader.h"

namespace sft::data {

struct FormatOptions {
  std::string text_field = "text";  // --dataset_text_field
  // (target, source) pairs: the row's `source` column is read as `target`.
  std::vector<std::pair<std::string, std::string>> columns;
};

// Parses "prompt=question,completion=answer"; throws "[data] ..." on a malformed spec.
std::vector<std::pair<std::string, std::string>> parse_column_mapping(const std::string& spec);

enum class DatasetFormat { kLanguageModeling, kConversational, kPromptCompletion, kTokenized };

struct DetectedFormat {
  DatasetFormat format = DatasetFormat::kLanguageModeling;
  bool conversational = false;  // kPromptCompletion: message lists rather than strings
  bool sharegpt = false;        // rows come as conversations/from/value
};

const char* format_name(const DetectedFormat& f);  // "conversational (ShareGPT)", ...

// Applies the column mapping in place; a missing source column is reported to `errors`
// (false = the row was skipped).
bool apply_column_mapping(RowJson& row, const FormatOptions& options, const RowRef& where,
                          RowErrors& errors);

// Detects the format from a (mapped) row; throws "[data] ..." naming the columns it saw
// when no format fits.
DetectedFormat detect_format(const RowJson& row, const FormatOptions& options, const RowRef& where);

// Checks and converts one (mapped) row; nullopt when it was skipped (counted in `errors`).
std::optional<Example> to_example(RowJson&& row, const DetectedFormat& format,
                                  const FormatOptions& options, const RowRef& where,
                                  RowErrors& errors);

// Reads files, maps columns, detects the format from the first row and converts every row.
// Returns the detected format (kLanguageModeling when there were no rows).
using ExampleVisitor = std::function<void(Example&& example, const RowRef& where)>;
DetectedFormat read_examples(const std::vector<std::string>& paths, const FormatOptions& options,
                             RowErrors& errors, const ExampleVisitor& visit);
// As above over rows from any source (a --datasets mixture: mixture.h).
using RowSource = std::function<void(RowErrors& errors, const RowVisitor& visit)>;
DetectedFormat read_examples(const RowSource& rows, const FormatOptions& options, RowErrors& errors,
                             const ExampleVisitor& visit);

}  // namespace sft::data
