// Token-level assistant masks: render a conversation, tokenize the text as transformers'
// apply_chat_template(tokenize=True) does (add_special_tokens=False), and mark every token
// whose input bytes overlap an assistant span (return_assistant_tokens_mask's rule, with
// the tokenizer's byte offsets instead of character offsets — the same tokens, since
// offsets and spans both fall on character boundaries).
//
// Spans come from assistant_mask(): {% generation %} blocks when the template has them
// (what transformers uses), else prefix rendering.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/assistant_mask.h"
#include "text/tokenizer.h"

namespace sft::chat {

struct AssistantTokens {
  std::string text;           // the rendered conversation
  std::vector<int32_t> ids;   // its tokens, no special tokens added
  std::vector<uint8_t> mask;  // per token: 1 when it belongs to an assistant turn
  MaskMethod method = MaskMethod::kGenerationBlocks;
};

// Throws what assistant_mask() and Tokenizer::encode_with_offsets throw.
AssistantTokens assistant_token_mask(const ChatTemplate& tmpl, const ChatInputs& inputs,
                                     const text::Tokenizer& tokenizer);

}  // namespace sft::chat
