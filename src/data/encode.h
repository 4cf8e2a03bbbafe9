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
// assistant_only_loss on a row that is not conversational is an error, as TRL refuses it.
// (TRL also refuses it for ShareGPT `conversations` datasets, since it checks before the
// conversion to messages; here those rows are messages and are accepted.)
//
// The EOS is --eos_token when given (it must be in the vocabulary), else the tokenizer's
// (tokenizer_config.json's eos_token, which the caller resolves into EncodeOptions, since
// the Tokenizer only knows tokenizer.json). As in TRL, --eos_token also replaces
// `eos_token` in the chat template's context (TRL sets tokenizer.eos_token), ahead of a
// row's chat_template_kwargs.
//
// Double BOS: TRL 1.16 + transformers 5.24 keep it. A text (or string prompt) that already
// starts with the BOS string, tokenized with a tokenizer whose post-processor adds the BOS
// (llama 3), gives [bos, bos, ...]; conversational rows are tokenized without special tokens
// so only the template's BOS is there. We match TRL by default and flag the row
// (double_bos: two identical special tokens lead the row); with fix_double_bos the first is
// dropped (with its label) and double_bos_fixed is set.
//
// Not reproduced: a prompt-completion dataset that also has a text column (TRL's add_eos
// then appends the EOS to the text instead of the completion) — an Example has no such
// column. Truncation and packing are not done here (see prepare.h).
// Encoder::encode is const and thread-safe: rows are encoded in parallel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
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
  // The tokenizer's EOS string (text::TokenizerConfig::eos_token); when nullopt, the chat
  // template's special_tokens().eos is used, if there is a template.
  std::optional<std::string> tokenizer_eos_token;
  bool fix_double_bos = false;  // off = TRL's ids
};

struct EncodedRow {
  std::vector<int32_t> input_ids;
  std::vector<int32_t> labels;  // same length; -100 where not trained
  bool prompt_not_prefix = false;
  bool double_bos = false;        // the row starts with two identical special tokens
  bool double_bos_fixed = false;  // ... and the first was dropped (fix_double_bos)
};

class Encoder {
 public:
  // `chat_template` may be null when no row is conversational; a conversational row then
  // fails with a hint to pass --chat_template_path. Throws "[data] ..." when eos_token is
  // not in the vocabulary; a row that needs an EOS (text, string completion) fails when
  // there is none.
  Encoder(const text::Tokenizer& tokenizer, const chat::ChatTemplate* chat_template,
          EncodeOptions options);

  // Throws sft::Error("[data] ...") for rows that cannot be encoded (the caller adds the
  // file and row); a template's raise_exception surfaces as its message.
  EncodedRow encode(const Example& example) const;

  int32_t eos_token_id() const { return eos_id_; }
  const std::string& eos_token() const { return eos_token_; }

 private:
  EncodedRow encode_row(const Text& t) const;
  EncodedRow encode_row(const Conversation& c) const;
  EncodedRow encode_row(const PromptCompletion& pc) const;
  EncodedRow encode_row(const Tokenized& t) const;
  const std::string& require_eos() const;
  std::string with_eos(const std::string& s) const;  // TRL's add_eos
  const chat::ChatTemplate& require_template() const;
  chat::ChatInputs chat_inputs(const std::vector<Message>& messages, const RowJson& tools,
                               const RowJson& kwargs) const;
  std::pair<std::vector<int32_t>, std::vector<uint8_t>> render(const chat::ChatInputs& in,
                                                               bool with_mask) const;

  const text::Tokenizer& tokenizer_;
  const chat::ChatTemplate* chat_template_;
  EncodeOptions options_;
  std::string eos_token_;
  int32_t eos_id_ = -1;
};

}  // namespace sft::data
