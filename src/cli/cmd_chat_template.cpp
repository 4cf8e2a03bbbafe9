// `sft chat-template`: render a conversation with a tokenizer's chat template exactly as
// transformers' apply_chat_template(tokenize=False) does, or (--mask) print which byte and
// character ranges of that text come from assistant turns.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "chat/assistant_mask.h"
#include "cli/command_registry.h"
#include "core/error.h"
#include "io/mapped_file.h"

namespace sft::cli {

namespace {

using OJ = jinja::OrderedJson;

constexpr const char* kUsage =
    "usage: sft chat-template --tokenizer PATH --messages FILE.json [options]\n\n"
    "Prints the conversation rendered by the tokenizer's chat template, byte-exact.\n"
    "  --tokenizer PATH            tokenizer folder or its tokenizer_config.json\n"
    "  --messages FILE.json        a list of messages, or an object with \"messages\"\n"
    "  --tools FILE.json           a list of tool schemas\n"
    "  --add_generation_prompt     end with the assistant header\n"
    "  --continue_final_message    leave the last message open\n"
    "  --kwargs JSON               extra template variables, e.g. '{\"enable_thinking\": false}'\n"
    "  --template FILE.jinja       use this template instead (alias --chat_template_path)\n"
    "  --mask                      print assistant spans as JSON instead of the text\n";

size_t char_index(const std::string& text, size_t byte) {
  size_t n = 0;
  for (size_t i = 0; i < byte && i < text.size(); ++i)
    n += (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
  return n;
}

}  // namespace

int run_chat_template(const Args& args) {
  std::string tokenizer, messages_path, tools_path, kwargs_text, template_path;
  chat::ChatInputs inputs;
  bool mask = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) fail("cli", "sft chat-template: " + a + " needs a value");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--tokenizer") {
      tokenizer = value();
    } else if (a == "--messages") {
      messages_path = value();
    } else if (a == "--tools") {
      tools_path = value();
    } else if (a == "--kwargs") {
      kwargs_text = value();
    } else if (a == "--template" || a == "--chat_template_path") {
      template_path = value();
    } else if (a == "--add_generation_prompt") {
      inputs.add_generation_prompt = true;
    } else if (a == "--continue_final_message") {
      inputs.continue_final_message = true;
    } else if (a == "--mask") {
      mask = true;
    } else {
      fail("cli", "sft chat-template: unknown argument '" + a + "' (see --help)");
    }
  }
  if (messages_path.empty() || (tokenizer.empty() && template_path.empty())) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  OJ messages = chat::parse_ordered_json(read_text_file(messages_path, "chat"), messages_path);
  if (messages.is_object() && messages.contains("messages")) messages = messages["messages"];
  if (!messages.is_array()) {
    fail_in_file("chat", {messages_path, ""},
                 "expected a list of messages, got " + std::string(messages.type_name()),
                 "write [{\"role\": \"user\", \"content\": \"...\"}, ...]");
  }
  inputs.messages = std::move(messages);
  if (!tools_path.empty())
    inputs.tools = chat::parse_ordered_json(read_text_file(tools_path, "chat"), tools_path);
  if (!kwargs_text.empty()) {
    inputs.kwargs = chat::parse_ordered_json(kwargs_text, "--kwargs");
    if (!inputs.kwargs.is_object())
      fail("cli", "sft chat-template: --kwargs must be a JSON object");
  }

  std::optional<chat::ChatTemplate> tmpl;
  if (template_path.empty()) {
    tmpl.emplace(chat::ChatTemplate::from_tokenizer(tokenizer, !inputs.tools.is_null()));
  } else {
    chat::SpecialTokens tokens;
    if (!tokenizer.empty()) {
      std::filesystem::path p(tokenizer);
      std::filesystem::path config =
          std::filesystem::is_directory(p) ? p / "tokenizer_config.json" : p;
      tokens = chat::special_tokens_from_config(read_json_file(config.string(), "chat"));
    }
    tmpl.emplace(chat::ChatTemplate::from_file(template_path, tokens));
  }
  std::string text;
  if (!mask) {
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
