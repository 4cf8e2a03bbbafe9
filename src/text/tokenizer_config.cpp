// See tokenizer_config.h.
#include "text/tokenizer_config.h"

#include <filesystem>

#include "core/error.h"

namespace sft::text {

namespace {

[[noreturn]] void bad(const std::string& source, const std::string& place, const std::string& what,
                      const std::string& hint) {
  fail_in_file("tokenizer", {source, place}, what, hint);
}

std::optional<std::string> token_field(const Json& root, const char* key,
                                       const std::string& source) {
  auto it = root.find(key);
  if (it == root.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  bad(source, key, "expected a string or an AddedToken object with \"content\"",
      "write e.g. \"" + std::string(key) + "\": \"<s>\"");
}

std::optional<bool> bool_field(const Json& root, const char* key, const std::string& source) {
  auto it = root.find(key);
  if (it == root.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) bad(source, key, "expected true or false", "use a JSON boolean");
  return it->get<bool>();
}

}  // namespace

std::optional<std::string> TokenizerConfig::chat_template(const std::string& name) const {
  auto it = chat_templates.find(name);
  if (it != chat_templates.end()) return it->second;
  if (name == "default" && chat_templates.size() == 1) return chat_templates.begin()->second;
  return std::nullopt;
}

TokenizerConfig TokenizerConfig::from_json(const Json& root, const std::string& source) {
  if (!root.is_object())
    bad(source, "top level", "expected a JSON object", "see transformers' tokenizer_config.json");
  TokenizerConfig c;
  c.bos_token = token_field(root, "bos_token", source);
  c.eos_token = token_field(root, "eos_token", source);
  c.pad_token = token_field(root, "pad_token", source);
  c.unk_token = token_field(root, "unk_token", source);
  c.add_bos_token = bool_field(root, "add_bos_token", source);
  c.add_eos_token = bool_field(root, "add_eos_token", source);
  c.split_special_tokens = bool_field(root, "split_special_tokens", source).value_or(false);
  if (auto it = root.find("model_max_length"); it != root.end() && it->is_number()) {
    double v = it->get<double>();
    if (v > 0 && v < 1e18) c.model_max_length = static_cast<int64_t>(v);
  }
  if (auto it = root.find("chat_template"); it != root.end() && !it->is_null()) {
    if (it->is_string()) {
      c.chat_templates["default"] = it->get<std::string>();
    } else if (it->is_array()) {
      for (size_t i = 0; i < it->size(); ++i) {
        const Json& t = (*it)[i];
        std::string place = "chat_template[" + std::to_string(i) + "]";
        if (!t.is_object() || !t.contains("name") || !t.contains("template") ||
            !t["name"].is_string() || !t["template"].is_string())
          bad(source, place, "expected {\"name\": ..., \"template\": ...}",
              "each named template needs a string name and a string template");
        c.chat_templates[t["name"].get<std::string>()] = t["template"].get<std::string>();
      }
    } else {
      bad(source, "chat_template", "expected a string or a list of named templates",
          "see transformers' chat_template documentation");
    }
  }
  return c;
}

TokenizerConfig TokenizerConfig::from_file(const std::string& path) {
  std::string file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    file = (std::filesystem::path(path) / "tokenizer_config.json").string();
  return from_json(read_json_file(file, "tokenizer"), file);
}

}  // namespace sft::text
