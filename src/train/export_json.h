// The JSON files of an HF export (export.h), as pure functions of their sources so that each
// rule can be tested alone:
//
//   config.json             source config with eos/pad ids set, "dtype" = the saved dtype
//                           (transformers 5 writes "dtype" and no "torch_dtype") and use_cache
//                           false (as transformers' Trainer leaves it)
//   generation_config.json  source generation config, or GenerationConfig.from_model_config;
//                           TRL's eos rule: the new id goes first unless already listed
//   tokenizer_config.json   source keys kept; eos_token / pad_token replaced
//   special_tokens_map.json same (kept consistent: transformers 4 lets it override the config)
//
// Files are rendered as transformers writes them: json.dumps(indent=2, sort_keys=True) + "\n"
// (ASCII-escaped for the model configs, UTF-8 for the tokenizer's).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "io/json.h"

namespace sft::export_json {

// The transformers release whose file layout we write (also written as transformers_version).
inline constexpr const char* kTransformersVersion = "5.24.0";

// torch's name for a float dtype: "float32", "bfloat16", "float16".
std::string torch_dtype_name(DType dtype);

// Token ids an export changes (absent = keep the source's).
struct TokenIds {
  std::optional<int64_t> eos;
  std::optional<int64_t> pad;
};

Json export_config(Json config, DType dtype, const TokenIds& ids);
// `source` is the source's generation_config.json (null when it has none); `config` is the
// source config.json, which seeds a missing one as transformers does when loading the model,
// before TRL's eos/pad changes apply.
Json export_generation_config(const Json& source, const Json& config, const TokenIds& ids);

// Token strings an export changes.
struct TokenStrings {
  std::optional<std::string> eos;
  std::optional<std::string> pad;
};

// `drop_chat_template`: a chat_template.jinja replaces a string template held in the config.
Json export_tokenizer_config(Json config, const TokenStrings& tokens, bool drop_chat_template);
Json export_special_tokens_map(Json map, const TokenStrings& tokens);

// Python's json.dumps(indent=2, sort_keys=True) + "\n".
std::string dump_like_python(const Json& value, bool ensure_ascii);

}  // namespace sft::export_json
