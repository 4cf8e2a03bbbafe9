// `sft chat-template`: render a conversation with a tokenizer's chat template exactly as
// transformers' apply_chat_template(tokenize=False) does, or (--mask) print which byte and
// character ranges of that text come from assistant turns.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "chat/assistant_mask.h"
#include "cli/command_line.h"
#include "cli/command_registry.h"
#include "core/error.h"
#include "io/mapped_file.h"
#include "io/options.h"

namespace sft::cli {

namespace {

using OJ = jinja::OrderedJson;

constexpr const char* kUsage =
    "usage: sft chat-template --tokenizer PATH --messages FILE.json [options]\n\n"
    "Prints the conversation rendered by the tokenizer's chat template, byte-exact.\n";

struct ChatTemplateFlags {
  std::string tokenizer, messages, tools, kwargs, template_path;
  bool add_generation_prompt = false, continue_final_message = false, mask = false;
};

OptionSet chat_template_options(ChatTemplateFlags& f) {
  OptionSet o("chat-template");
  const std::string in = "input", render = "rendering", out = "output";
  o.add_string("tokenizer", &f.tokenizer, in, "tokenizer folder or its tokenizer_config.json");
  o.add_string("messages", &f.messages, in,
               "FILE.json: a list of messages, or an object with \"messages\"");
  o.add_string("tools", &f.tools, in, "FILE.json: a list of tool schemas");
  o.add_string("template", &f.template_path, in, "FILE.jinja to use instead of the tokenizer's");
  o.add_string("chat_template_path", &f.template_path, in, "the same as --template");
  o.add_bool("add_generation_prompt", &f.add_generation_prompt, render,
             "end with the assistant header");
  o.add_bool("continue_final_message", &f.continue_final_message, render,
             "leave the last message open");
  o.add_string("kwargs", &f.kwargs, render,
               "extra template variables, e.g. '{\"enable_thinking\": false}'");
  o.add_bool("mask", &f.mask, out, "print assistant spans as JSON instead of the text");
  return o;
}

size_t char_index(const std::string& text, size_t byte) {
  size_t n = 0;
  for (size_t i = 0; i < byte && i < text.size(); ++i)
    n += (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
  return n;
}

}  // namespace

int run_chat_template(const Args& args) {
  ChatTemplateFlags f;
  OptionSet options = chat_template_options(f);
  if (!parse_command_line("chat-template", kUsage, options, args)) return 0;
  if (f.messages.empty() || (f.tokenizer.empty() && f.template_path.empty()))
    return usage_error(kUsage);
  chat::ChatInputs inputs;
  inputs.add_generation_prompt = f.add_generation_prompt;
  inputs.continue_final_message = f.continue_final_message;
  OJ messages = chat::parse_ordered_json(read_text_file(f.messages, "chat"), f.messages);
  if (messages.is_object() && messages.contains("messages")) messages = messages["messages"];
  if (!messages.is_array()) {
    fail_in_file("chat", {f.messages, ""},
                 "expected a list of messages, got " + std::string(messages.type_name()),
                 "write [{\"role\": \"user\", \"content\": \"...\"}, ...]");
  }
  inputs.messages = std::move(messages);
  if (!f.tools.empty())
    inputs.tools = chat::parse_ordered_json(read_text_file(f.tools, "chat"), f.tools);
  if (!f.kwargs.empty()) {
    inputs.kwargs = chat::parse_ordered_json(f.kwargs, "--kwargs");
    if (!inputs.kwargs.is_object())
      fail("cli", "sft chat-template: --kwargs must be a JSON object");
  }

  std::optional<chat::ChatTemplate> tmpl;
  if (f.template_path.empty()) {
    tmpl.emplace(chat::ChatTemplate::from_tokenizer(f.tokenizer, !inputs.tools.is_null()));
  } else {
    chat::SpecialTokens tokens;
    if (!f.tokenizer.empty()) {
      std::filesystem::path p(f.tokenizer);
      std::filesystem::path config =
          std::filesystem::is_directory(p) ? p / "tokenizer_config.json" : p;
      tokens = chat::special_tokens_from_config(read_json_file(config.string(), "chat"));
    }
    tmpl.emplace(chat::ChatTemplate::from_file(f.template_path, tokens));
  }
  std::string text;
  if (!f.mask) {
    text = tmpl->apply(inputs);
  } else {
    chat::AssistantMask m = chat::assistant_mask(*tmpl, inputs);
    OJ out = {{"method", m.method == chat::MaskMethod::kGenerationBlocks ? "generation" : "prefix"},
              {"spans", OJ::array()}};
    for (const chat::CharSpan& s : m.spans) {
      out["spans"].push_back({{"begin", char_index(m.text, s.begin)},
                              {"end", char_index(m.text, s.end)},
                              {"byte_begin", s.begin},
                              {"byte_end", s.end},
                              {"text", m.text.substr(s.begin, s.end - s.begin)}});
    }
    text = out.dump(2) + "\n";
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

SFT_REGISTER_COMMAND(
    "chat-template",
    "render a conversation with a tokenizer's chat template (or its assistant mask)",
    run_chat_template);

}  // namespace sft::cli
