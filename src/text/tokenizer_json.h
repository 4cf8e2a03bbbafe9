// A fast, strict reader for tokenizer.json. nlohmann::json needs ~0.7 s for Qwen3's 11 MB
// file (plus duplicate-key checks); here the two big fields, model.vocab and model.merges,
// are scanned straight into flat vectors and only the small rest becomes a Json tree.
// Strictness matches io/json.h: invalid UTF-8, syntax errors and duplicate keys are errors
// naming the file and the line/column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/json.h"

namespace sft::text {

struct TokenizerJson {
  Json root;  // everything except model.vocab and model.merges
  std::vector<std::pair<std::string, int64_t>> vocab;  // in file order
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<size_t> bad_merges;  // indices of merges that were not a pair of strings
  bool has_vocab = false, has_merges = false;
};

// Throws sft::Error("[tokenizer] <source>: line L, column C: ...").
TokenizerJson read_tokenizer_json(std::string_view text, const std::string& source);

}  // namespace sft::text
