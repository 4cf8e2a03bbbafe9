// tokenizer_config.json (transformers' side of a tokenizer): the special tokens by role,
// add_bos_token / add_eos_token, the chat template(s), model_max_length and
// split_special_tokens. Token fields may be plain strings or AddedToken objects
// ({"content": ..., "__type": "AddedToken"}); chat_template may be a string or a list of
// {"name", "template"} objects (the unnamed string is called "default").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "io/json.h"

namespace sft::text {

struct TokenizerConfig {
  std::optional<std::string> bos_token, eos_token, pad_token, unk_token;
  std::optional<bool> add_bos_token, add_eos_token;
  std::map<std::string, std::string> chat_templates;  // name → Jinja source
  std::optional<int64_t> model_max_length;  // absent when missing or "unlimited" (>= 1e18)
  bool split_special_tokens = false;

  // The template to use: "default" if present, else the only one; nullopt when none.
  std::optional<std::string> chat_template(const std::string& name = "default") const;

  // PATH is a folder holding tokenizer_config.json, or the file. Throws sft::Error
  // ("[tokenizer] <file>: <field>: ...") for malformed content.
  static TokenizerConfig from_file(const std::string& path);
  static TokenizerConfig from_json(const Json& root, const std::string& source);
};

}  // namespace sft::text
