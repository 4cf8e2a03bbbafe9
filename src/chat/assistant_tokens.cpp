// See assistant_tokens.h.
#include "chat/assistant_tokens.h"

namespace sft::chat {

AssistantTokens assistant_token_mask(const ChatTemplate& tmpl, const ChatInputs& inputs,
                                     const text::Tokenizer& tokenizer) {
  AssistantMask spans = assistant_mask(tmpl, inputs);
  text::Encoding enc = tokenizer.encode_with_offsets(spans.text, /*add_special_tokens=*/false);
  AssistantTokens out;
  out.mask = token_mask_from_spans(spans.spans, enc.offsets);
  out.ids = std::move(enc.ids);
  out.text = std::move(spans.text);
  out.method = spans.method;
  return out;
}

}  // namespace sft::chat
