// apply_chat_template as transformers does it (tokenization_utils_base.apply_chat_template
// + chat_template_utils.render_jinja_template), without tokenizing: messages (arbitrary
// JSON) + tools + flags → the exact training/prompt text.
//
// The steps mirror transformers 5.x: message keys whose value is null are dropped;
// reasoning is aliased (reasoning_content / thinking / reasoning fill each other);
// bos/eos/pad/unk token strings come first in the context and extra kwargs override them;
// `tools` and `documents` are always defined (None when absent); continue_final_message
// tags the last message's content and cuts the render after it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chat/jinja_template.h"
#include "io/json.h"

// Parses JSON keeping key order; throws sft::Error("[chat] <source>: ...") on bad JSON.
namespace sft::chat {
jinja::OrderedJson parse_ordered_json(std::string_view text, const std::string& source);
}

namespace sft::chat {

struct ChatInputs {
  jinja::OrderedJson messages = jinja::OrderedJson::array();
  jinja::OrderedJson tools;      // null or array
  jinja::OrderedJson documents;  // null or array
  bool add_generation_prompt = false;
  bool continue_final_message = false;
  jinja::OrderedJson kwargs = jinja::OrderedJson::object();  // enable_thinking, ...
};

// Special token strings from tokenizer_config.json (absent ones are not passed at all).
struct SpecialTokens {
  std::optional<std::string> bos, eos, pad, unk;
};

class ChatTemplate {
 public:
  ChatTemplate(std::string source, SpecialTokens tokens);

  // Reads a tokenizer folder (or its tokenizer_config.json): chat_template.jinja if present,
  // else tokenizer_config.json's chat_template (a string, or a list of {name, template}
  // from which "default" is used, "tool_use" when `for_tools`). Throws sft::Error naming the
  // file when there is no template.
  static ChatTemplate from_tokenizer(const std::string& path, bool for_tools = false);
  // A template file (e.g. --chat_template_path) with the tokenizer's special tokens.
  static ChatTemplate from_file(const std::string& template_path, SpecialTokens tokens);

  // The rendered text. Throws jinja::TemplateError (template errors, raise_exception) or
  // sft::Error("[chat] ...") for invalid inputs, as transformers raises ValueError/TypeError.
  std::string apply(const ChatInputs& inputs) const;
  // Also collects {% generation %} spans (byte offsets into the returned text).
  std::string apply(const ChatInputs& inputs, std::vector<jinja::ByteSpan>* spans) const;

  // Inputs converted once into template values, so that prefixes of the conversation can
  // be rendered cheaply (assistant masks by prefix rendering).
  struct Prepared {
    jinja::ValueList messages;
    jinja::ValueDict context;  // special tokens, kwargs, tools, documents
  };
  Prepared prepare(const ChatInputs& inputs) const;
  // Renders prepared.messages[:n] (n = 0 allowed) without continue_final_message.
  std::string render_prefix(const Prepared& prepared, size_t n, bool add_generation_prompt,
                            std::vector<jinja::ByteSpan>* spans = nullptr) const;

  const jinja::Template& jinja() const { return template_; }
  const SpecialTokens& special_tokens() const { return tokens_; }

 private:
  jinja::Template template_;
  SpecialTokens tokens_;
};

// Reads bos/eos/pad/unk from a parsed tokenizer_config.json (strings or {"content": ...}).
SpecialTokens special_tokens_from_config(const Json& config);

}  // namespace sft::chat
