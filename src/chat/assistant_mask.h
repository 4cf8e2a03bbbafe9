// Which bytes of a rendered conversation come from assistant turns (for assistant_only_loss),
// by two independent methods:
//
//  (a) generation blocks: the template marks assistant output with {% generation %} ...
//      {% endgeneration %}; the spans are where those bodies land (transformers'
//      return_assistant_tokens_mask, in bytes instead of characters).
//  (b) prefix rendering, for templates without such blocks: render messages[:i] and
//      messages[:i+1]; the first must be a prefix of the second. An assistant turn i owns
//      the bytes after render(messages[:i], add_generation_prompt=True) up to the end of
//      render(messages[:i+1]) — its content and the end-of-turn text the template emits,
//      but not the role header the generation prompt already wrote.
//
// Spans are byte offsets into the UTF-8 text. Token-level masks follow from a tokenizer's
// byte offsets with token_mask_from_spans (the rule transformers uses: a token is masked
// when it overlaps a span).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chat/chat_template.h"

namespace sft::chat {

struct CharSpan {
  size_t begin = 0;  // byte offsets, [begin, end)
  size_t end = 0;
  bool operator==(const CharSpan&) const = default;
};

enum class MaskMethod { kGenerationBlocks, kPrefixRendering };

struct AssistantMask {
  std::string text;
  std::vector<CharSpan> spans;
  MaskMethod method = MaskMethod::kGenerationBlocks;
};

// Method (a). Throws sft::Error when the template has no {% generation %} block.
AssistantMask mask_from_generation_blocks(const ChatTemplate& tmpl, const ChatInputs& inputs);
// Method (b). Throws sft::Error naming the turn when the template is not prefix-preserving.
AssistantMask mask_from_prefix_rendering(const ChatTemplate& tmpl, const ChatInputs& inputs);
// (a) when the template has generation blocks, else (b).
AssistantMask assistant_mask(const ChatTemplate& tmpl, const ChatInputs& inputs);

// 1 for every token whose [begin, end) byte range overlaps a span, else 0.
std::vector<uint8_t> token_mask_from_spans(const std::vector<CharSpan>& spans,
                                           const std::vector<std::pair<size_t, size_t>>& offsets);

}  // namespace sft::chat
