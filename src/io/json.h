// Strict JSON reading for the files users hand us (config.json, safetensors headers, ...).
//
// nlohmann::json accepts duplicate keys (last one wins) — a silent way for a broken
// file to mean two things — so parse_json_strict rejects them, and it reports invalid
// UTF-8 by byte offset before parsing. Syntax errors carry nlohmann's line/column.
// OrderedJson keeps object keys in the file's order (as Python's dict does) for values that
// reach a chat template's tojson (dataset rows); everything else uses Json (sorted keys).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/error.h"

namespace sft {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

class JsonError : public Error {
 public:
  enum class Kind { kSyntax, kInvalidUtf8, kDuplicateKey };
  JsonError(std::string_view component, std::string_view message, Kind kind, std::string detail)
      : Error(component, message), kind_(kind), detail_(std::move(detail)) {}

  Kind kind() const { return kind_; }
  // kSyntax: "line L, column C: what"; kInvalidUtf8: "byte N"; kDuplicateKey: the key.
  const std::string& detail() const { return detail_; }

 private:
  Kind kind_;
  std::string detail_;
};

// Throws JsonError (with `component` and `source`, usually a file name, in the message).
Json parse_json_strict(std::string_view text, std::string_view component,
                       const std::string& source);
// The same checks and errors, keeping the keys' order.
OrderedJson parse_ordered_json_strict(std::string_view text, std::string_view component,
                                      const std::string& source);

// Reads and strictly parses a JSON file.
Json read_json_file(const std::string& path, std::string_view component);

// "object", "array", "string", "number", "boolean", "null" — for "expected X, got Y" errors.
std::string json_type_name(const Json& value);
std::string json_type_name(const OrderedJson& value);

}  // namespace sft
