#include "chat/assistant_mask.h"

#include "core/error.h"

namespace sft::chat {

namespace {

void reject_continue(const ChatInputs& inputs) {
  if (inputs.continue_final_message) {
    fail("chat",
         "assistant masks cannot be computed with continue_final_message (as in transformers)");
  }
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

[[noreturn]] void not_prefix_preserving(const ChatInputs& inputs, size_t i, const char* what) {
  const jinja::OrderedJson& m = inputs.messages[i];
  std::string role = m.is_object() && m.contains("role") && m["role"].is_string()
                         ? m["role"].get<std::string>()
                         : "?";
  fail("chat", "the chat template is not prefix-preserving at message " + std::to_string(i) +
                   " (role '" + role + "'): " + what +
                   ", so assistant tokens cannot be located by prefix rendering (hint: pass "
                   "--chat_template_path with a training template that wraps assistant turns "
                   "in {% generation %} blocks or renders earlier turns unchanged)");
}

}  // namespace

AssistantMask mask_from_generation_blocks(const ChatTemplate& tmpl, const ChatInputs& inputs) {
  reject_continue(inputs);
  if (!tmpl.jinja().has_generation_blocks()) {
    fail("chat",
         "the chat template has no {% generation %} block (hint: use prefix rendering "
         "or a training template with generation blocks)");
  }
  AssistantMask mask;
  mask.method = MaskMethod::kGenerationBlocks;
  std::vector<jinja::ByteSpan> spans;
  mask.text = tmpl.apply(inputs, &spans);
  for (const jinja::ByteSpan& s : spans) {
    if (s.end > s.begin) mask.spans.push_back({s.begin, s.end});
  }
  return mask;
}

AssistantMask mask_from_prefix_rendering(const ChatTemplate& tmpl, const ChatInputs& inputs) {
  reject_continue(inputs);
  AssistantMask mask;
  mask.method = MaskMethod::kPrefixRendering;
  mask.text = tmpl.apply(inputs);  // validates the inputs as transformers does
  const ChatTemplate::Prepared chat = tmpl.prepare(inputs);
  const size_t n = chat.messages.size();
  // render(messages[:i]); for i = 0 the empty conversation (BOS, a default system prompt...)
  // — a template that cannot render it contributes nothing.
  std::string prev;
  try {
    prev = tmpl.render_prefix(chat, 0, false);
  } catch (const Error&) {
    prev.clear();
  }
  for (size_t i = 0; i < n; ++i) {
    std::string next = i + 1 == n && !inputs.add_generation_prompt
                           ? mask.text
                           : tmpl.render_prefix(chat, i + 1, false);
    if (!starts_with(next, prev)) {
      not_prefix_preserving(inputs, i,
                            "rendering the messages before it is not a prefix of "
                            "rendering them with it");
    }
    const jinja::OrderedJson& m = inputs.messages[i];
    if (m.contains("role") && m["role"] == "assistant") {
      std::string header;
      try {
        header = tmpl.render_prefix(chat, i, true);
      } catch (const Error&) {
        if (i > 0) throw;
        header = prev;  // the template cannot render an empty conversation
      }
      if (!starts_with(next, header)) {
        not_prefix_preserving(inputs, i,
                              "the generation prompt before it is not a prefix of "
                              "the rendered turn");
      }
      if (next.size() > header.size()) mask.spans.push_back({header.size(), next.size()});
    }
    prev = std::move(next);
  }
  if (!starts_with(mask.text, prev)) {
    not_prefix_preserving(inputs, n - 1, "the generation prompt changes the earlier turns");
  }
  return mask;
}

AssistantMask assistant_mask(const ChatTemplate& tmpl, const ChatInputs& inputs) {
  return tmpl.jinja().has_generation_blocks() ? mask_from_generation_blocks(tmpl, inputs)
                                              : mask_from_prefix_rendering(tmpl, inputs);
}

std::vector<uint8_t> token_mask_from_spans(const std::vector<CharSpan>& spans,
                                           const std::vector<std::pair<size_t, size_t>>& offsets) {
  std::vector<uint8_t> mask(offsets.size(), 0);
  size_t s = 0;
  for (size_t t = 0; t < offsets.size(); ++t) {
    while (s < spans.size() && offsets[t].first >= spans[s].end) ++s;
    if (s == spans.size()) break;
    if (offsets[t].second > spans[s].begin) mask[t] = 1;
  }
  return mask;
}

}  // namespace sft::chat
