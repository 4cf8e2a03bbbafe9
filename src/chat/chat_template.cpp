#include "chat/chat_template.h"

#include <filesystem>

#include "chat/jinja_strings.h"
#include "io/mapped_file.h"

namespace sft::chat {

namespace fs = std::filesystem;
using jinja::Value;
using jinja::ValueDict;
using OJ = jinja::OrderedJson;

namespace {

constexpr const char* kContinueTag = "CONTINUE_FINAL_MESSAGE_TAG ";

[[noreturn]] void value_error(const std::string& message) {
  throw jinja::TemplateError(jinja::ErrorClass::kValue, message);
}

std::optional<std::string> token_string(const Json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return std::nullopt;
}

// The message without null-valued keys; when a reasoning field is set, as
// {"thinking": r, **message, "reasoning_content": r} (transformers' aliasing).
Value normalized_message(const OJ& message) {
  const OJ* reasoning = nullptr;
  for (const char* f : {"reasoning_content", "thinking", "reasoning"}) {
    auto it = message.find(f);
    if (it != message.end() && !it->is_null()) {
      reasoning = &*it;
      break;
    }
  }
  ValueDict d;
  d.items.reserve(message.size() + (reasoning ? 2 : 0));
  if (reasoning) d.items.emplace_back("thinking", Value::from_json(*reasoning));
  for (auto it = message.begin(); it != message.end(); ++it) {
    if (it->is_null()) continue;
    if (reasoning && it.key() == "thinking") {
      d.items[0].second = Value::from_json(*it);
    } else {
      d.items.emplace_back(it.key(), Value::from_json(*it));
    }
  }
  if (reasoning) d.set("reasoning_content", Value::from_json(*reasoning));
  return Value::dict(std::move(d));
}

}  // namespace

OJ parse_ordered_json(std::string_view text, const std::string& source) {
  try {
    return OJ::parse(text.begin(), text.end());
  } catch (const OJ::exception& e) {
    fail_in_file("chat", {source, ""}, std::string("invalid JSON: ") + e.what(),
                 "check the file with a JSON validator (e.g. python -m json.tool)");
  }
}

SpecialTokens special_tokens_from_config(const Json& config) {
  SpecialTokens t;
  t.bos = token_string(config, "bos_token");
  t.eos = token_string(config, "eos_token");
  t.pad = token_string(config, "pad_token");
  t.unk = token_string(config, "unk_token");
  return t;
}

ChatTemplate::ChatTemplate(std::string source, SpecialTokens tokens)
    : template_(std::move(source)), tokens_(std::move(tokens)) {}

ChatTemplate ChatTemplate::from_file(const std::string& template_path, SpecialTokens tokens) {
  return ChatTemplate(read_text_file(template_path, "chat"), std::move(tokens));
}

ChatTemplate ChatTemplate::from_tokenizer(const std::string& path, bool for_tools) {
  fs::path p(path);
  fs::path config_path = fs::is_directory(p) ? p / "tokenizer_config.json" : p;
  fs::path dir = config_path.parent_path();
  Json config =
      fs::exists(config_path) ? read_json_file(config_path.string(), "chat") : Json::object();
  SpecialTokens tokens = special_tokens_from_config(config);
  fs::path jinja_file = dir / "chat_template.jinja";
  if (fs::exists(jinja_file)) return from_file(jinja_file.string(), std::move(tokens));
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) {
    fail_in_file("chat", {config_path.string(), "key 'chat_template'"},
                 "the tokenizer has no chat template",
                 "pass a template with --template FILE.jinja (e.g. a ChatML template)");
  }
  if (it->is_string()) return ChatTemplate(it->get<std::string>(), std::move(tokens));
  if (it->is_array()) {
    const Json* chosen = nullptr;
    for (const Json& entry : *it) {
      if (!entry.is_object() || !entry.contains("name") || !entry.contains("template")) continue;
      if (entry["name"] == "tool_use" && for_tools) chosen = &entry;
      if (entry["name"] == "default" && !(chosen && for_tools)) chosen = &entry;
    }
    if (chosen && (*chosen)["template"].is_string())
      return ChatTemplate((*chosen)["template"].get<std::string>(), std::move(tokens));
    fail_in_file("chat", {config_path.string(), "key 'chat_template'"},
                 "the tokenizer has several chat templates and none is named 'default'",
                 "pass the one to use with --template FILE.jinja");
  }
  fail_in_file(
      "chat", {config_path.string(), "key 'chat_template'"},
      "chat_template must be a string or a list of {name, template}, got " + json_type_name(*it),
      "fix tokenizer_config.json");
}

ChatTemplate::Prepared ChatTemplate::prepare(const ChatInputs& inputs) const {
  if (!inputs.messages.is_array())
    throw jinja::TemplateError(jinja::ErrorClass::kType, "messages must be a list of dicts");
  Prepared p;
  // Normalize straight into template values: drop null-valued keys, alias reasoning.
  p.messages.reserve(inputs.messages.size());
  for (const OJ& m : inputs.messages) {
    if (!m.is_object()) {
      throw jinja::TemplateError(jinja::ErrorClass::kType,
                                 "Chat messages should be dicts, but got " + m.dump() + ".");
    }
    p.messages.push_back(normalized_message(m));
  }
  ValueDict& ctx = p.context;
  if (tokens_.bos) ctx.set("bos_token", Value(*tokens_.bos));
  if (tokens_.eos) ctx.set("eos_token", Value(*tokens_.eos));
  if (tokens_.unk) ctx.set("unk_token", Value(*tokens_.unk));
  if (tokens_.pad) ctx.set("pad_token", Value(*tokens_.pad));
  if (inputs.kwargs.is_object()) {
    for (auto it = inputs.kwargs.begin(); it != inputs.kwargs.end(); ++it)
      ctx.set(it.key(), Value::from_json(*it));
  }
  ctx.set("tools", Value::from_json(inputs.tools));
  ctx.set("documents", Value::from_json(inputs.documents));
  return p;
}

std::string ChatTemplate::render_prefix(const Prepared& prepared, size_t n,
                                        bool add_generation_prompt,
                                        std::vector<jinja::ByteSpan>* spans) const {
  ValueDict ctx = prepared.context;
  n = std::min(n, prepared.messages.size());
  ctx.set("messages",
          Value::list(jinja::ValueList(prepared.messages.begin(),
                                       prepared.messages.begin() + static_cast<long>(n))));
  ctx.set("add_generation_prompt", Value(add_generation_prompt));
  return template_.render(std::move(ctx), spans);
}

std::string ChatTemplate::apply(const ChatInputs& inputs) const {
  return apply(inputs, nullptr);
}

std::string ChatTemplate::apply(const ChatInputs& inputs,
                                std::vector<jinja::ByteSpan>* spans) const {
  if (!inputs.messages.is_array())
    throw jinja::TemplateError(jinja::ErrorClass::kType, "messages must be a list of dicts");
  if (inputs.messages.empty())
    value_error(
        "Cannot apply chat template to an empty conversation. Provide at least one message.");
  if (inputs.continue_final_message && inputs.add_generation_prompt)
    value_error("continue_final_message and add_generation_prompt are not compatible.");

  Prepared prepared = prepare(inputs);
  jinja::ValueList& chat = prepared.messages;

  std::string final_message;
  if (inputs.continue_final_message && !chat.empty()) {
    Value* content = chat.back().mutable_entries().find("content");
    if (!content)
      value_error(
          "continue_final_message is set but the final message has no \"content\" to continue!");
    if (template_.source().find("content") == std::string::npos)
      value_error(
          "continue_final_message is set to \"content\" but this is not an accepted field in the "
          "chat_template");
    if (content->is_sequence()) {
      bool found = false;
      jinja::ValueList& blocks = content->mutable_items();
      for (auto block = blocks.rbegin(); block != blocks.rend() && !found; ++block) {
        if (!block->is_mapping()) continue;
        if (Value* text = block->mutable_entries().find("text")) {
          if (!text->is_string())
            throw jinja::TemplateError(jinja::ErrorClass::kType, "text must be a string");
          final_message = text->str();
          *text = Value(final_message + kContinueTag);
          found = true;
        }
      }
      if (!found)
        value_error(
            "continue_final_message is set but we could not find any text to continue in the final "
            "message!");
    } else if (content->is_string()) {
      final_message = content->str();
      *content = Value(final_message + kContinueTag);
    } else {
      throw jinja::TemplateError(jinja::ErrorClass::kType,
                                 "final message content must be a string");
    }
  }

  std::string rendered =
      render_prefix(prepared, prepared.messages.size(), inputs.add_generation_prompt, spans);

  if (inputs.continue_final_message) {
    using jinja::pystr::Side;
    std::string stripped_final = jinja::pystr::strip(final_message, std::nullopt, Side::kBoth);
    const std::string tag = kContinueTag;
    const std::string tag_core = "CONTINUE_FINAL_MESSAGE_TAG";
    if (rendered.find(stripped_final) == std::string::npos ||
        rendered.find(tag_core) == std::string::npos) {
      value_error(
          "continue_final_message is set but the final message does not appear in the chat after "
          "applying the chat template!");
    }
    size_t loc = rendered.rfind(tag_core);
    if (rendered.compare(loc, tag.size(), tag) == 0) {
      rendered.resize(loc);
    } else {
      rendered = jinja::pystr::strip(rendered.substr(0, loc), std::nullopt, Side::kRight);
    }
  }
  return rendered;
}

}  // namespace sft::chat
