// Encoding one dataset row into training tokens, as TRL's SFTTrainer._prepare_dataset does
// (trl 1.16): render + tokenize + masks → input_ids and labels (-100 = not trained).
//
//   Text              text (+ EOS when it does not already end with it), tokenized with the
//                     tokenizer's special tokens; every token trained
//   Conversation      apply_chat_template(messages, tools, **chat_template_kwargs) tokenized
//                     without special tokens; with assistant_only_loss only assistant tokens
//                     are trained (chat::assistant_token_mask), and a row with none is an error
//   PromptCompletion  prompt and prompt+completion tokenized (conversational: the prompt with
//                     add_generation_prompt=True); the completion starts where the two token
//                     lists diverge (counted in prompt_not_prefix when the prompt is not a
//                     full prefix); with completion_only_loss the prompt is not trained;
//                     non-conversational completions get the EOS appended when missing
//   Tokenized         input_ids used as is; labels as given, else every token trained
//
// The EOS is --eos_token when given (it must be in the vocabulary), else the tokenizer's.
// A double BOS (the template emits the BOS and the tokenizer adds another) is collapsed to
// one, and counted. Truncation and packing are not done here (see prepare.h).
// Encoder::encode is const and thread-safe: rows are encoded in parallel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "data/example.h"
#include "text/tokenizer.h"

namespace sft::data {

struct EncodeOptions {
  // TRL's default (nullopt) is on for prompt-completion rows.
  std::optional<bool> completion_only_loss;
  bool assistant_only_loss = false;
  std::optional<std::string> eos_token;  // --eos_token; nullopt = the tokenizer's EOS
};

struct EncodedRow {
  std::vector<int32_t> input_ids;
  std::vector<int32_t> labels;  // same length; -100 where not trained
  bool prompt_not_prefix = false;
  bool double_bos_fixed = false;
};

class Encoder {
 public:
  // `chat_template` may be null when no row is conversational; a conversational row then
  // fails with a hint to pass --chat_template_path. Throws "[data] ..." when eos_token is
  // not in the vocabulary or the tokenizer has no EOS and one is needed.
  Encoder(const text::Tokenizer& tokenizer, const chat::ChatTemplate* chat_template,
          EncodeOptions options);

  // Throws sft::Error("[data] ...") for rows that cannot be encoded (the caller adds the
  // file and row); a template's raise_exception surfaces as its message.
  EncodedRow encode(const Example& example) const;

  int32_t eos_token_id() const { return eos_id_; }
  const std::string& eos_token() const { return eos_token_; }

 private:
  const text::Tokenizer& tokenizer_;
  const chat::ChatTemplate* chat_template_;
  EncodeOptions options_;
  std::string eos_token_;
  int32_t eos_id_ = -1;
};

}  // namespace sft::data
