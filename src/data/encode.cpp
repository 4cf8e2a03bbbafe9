// See encode.h. Each branch follows one path of TRL 1.16's _prepare_dataset: add_eos →
// tokenize_fn → build_labels (a token is trained only when every applicable mask is 1).
#include "data/encode.h"

#include <algorithm>
#include <utility>

#include "chat/assistant_tokens.h"
#include "core/error.h"

namespace sft::data {

namespace {

constexpr int32_t kIgnore = -100;

// TRL's common_prefix_length.
size_t common_prefix_length(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

void require_assistant_token(const std::vector<uint8_t>& mask) {
  if (std::find(mask.begin(), mask.end(), uint8_t{1}) != mask.end()) return;
  fail("data",
       "assistant_only_loss is on but this row has no assistant token (hint: every row needs "
       "an assistant turn, and a template with {% generation %} blocks must put the "
       "assistant's output inside them; or turn assistant_only_loss off)");
}

// TRL refuses assistant_only_loss for a dataset that is not conversational.
void reject_assistant_only(bool assistant_only_loss, const char* format) {
  if (!assistant_only_loss) return;
  fail("data", std::string("assistant_only_loss needs conversational rows, and this row is ") +
                   format +
                   " (hint: use messages or prompt/completion message lists, or turn "
                   "assistant_only_loss off)");
}

}  // namespace

Encoder::Encoder(const text::Tokenizer& tokenizer, const chat::ChatTemplate* chat_template,
                 EncodeOptions options)
    : tokenizer_(tokenizer), chat_template_(chat_template), options_(std::move(options)) {
  if (options_.eos_token) {
    std::optional<int32_t> id = tokenizer_.token_to_id(*options_.eos_token);
    if (!id)
      fail("data", "--eos_token '" + *options_.eos_token + "' is not in the vocabulary of " +
                       tokenizer_.source() +
                       " (hint: pass a token the tokenizer has, e.g. the template's end-of-turn "
                       "token, or leave --eos_token unset)");
    eos_token_ = *options_.eos_token;
    eos_id_ = *id;
    return;
  }
  std::optional<std::string> eos = options_.tokenizer_eos_token;
  if (!eos && chat_template_) eos = chat_template_->special_tokens().eos;
  if (eos) {
    eos_token_ = *eos;
    eos_id_ = tokenizer_.token_to_id(eos_token_).value_or(-1);
  }
}

EncodedRow Encoder::encode(const Example& example) const {
  EncodedRow row = std::visit([this](const auto& e) { return encode_row(e); }, example);
  // Two identical special tokens at the start: the text brought its own BOS and the
  // tokenizer added one (see encode.h).
  if (row.input_ids.size() >= 2 && row.input_ids[0] == row.input_ids[1] &&
      tokenizer_.is_special(row.input_ids[0])) {
    row.double_bos = true;
    if (options_.fix_double_bos) {
      row.input_ids.erase(row.input_ids.begin());
      row.labels.erase(row.labels.begin());
      row.double_bos_fixed = true;
    }
  }
  return row;
}

const std::string& Encoder::require_eos() const {
  if (eos_token_.empty())
    fail("data",
         "the tokenizer has no EOS token to end this row with (hint: pass --eos_token, or set "
         "eos_token in tokenizer_config.json)");
  return eos_token_;
}

std::string Encoder::with_eos(const std::string& s) const {
  const std::string& eos = require_eos();
  if (s.ends_with(eos)) return s;
  return s + eos;
}

const chat::ChatTemplate& Encoder::require_template() const {
  if (!chat_template_)
    fail("data",
         "a conversational row needs a chat template, and the tokenizer has none (hint: pass "
         "--chat_template_path with a .jinja template)");
  return *chat_template_;
}

// Rows are ordered JSON (row_json.h), the type the template takes: keys reach it in the
// file's order, as tojson shows them in transformers.
chat::ChatInputs Encoder::chat_inputs(const std::vector<Message>& messages, const RowJson& tools,
                                      const RowJson& kwargs) const {
  chat::ChatInputs in;
  in.messages = message_list_to_json(messages);
  if (!tools.is_null()) in.tools = tools;
  // TRL replaces tokenizer.eos_token, which apply_chat_template passes to the template;
  // a row's own kwargs still win, as in transformers.
  if (options_.eos_token) in.kwargs["eos_token"] = *options_.eos_token;
  if (kwargs.is_object())
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) in.kwargs[it.key()] = it.value();
  return in;
}

// Tokens of a rendered conversation and, with assistant_only_loss, their assistant mask.
std::pair<std::vector<int32_t>, std::vector<uint8_t>> Encoder::render(const chat::ChatInputs& in,
                                                                      bool with_mask) const {
  const chat::ChatTemplate& tmpl = require_template();
  if (with_mask) {
    chat::AssistantTokens t = chat::assistant_token_mask(tmpl, in, tokenizer_);
    require_assistant_token(t.mask);
    return {std::move(t.ids), std::move(t.mask)};
  }
  return {tokenizer_.encode(tmpl.apply(in), /*add_special_tokens=*/false), {}};
}

EncodedRow Encoder::encode_row(const Text& t) const {
  reject_assistant_only(options_.assistant_only_loss, "text");
  EncodedRow row;
  row.input_ids = tokenizer_.encode(with_eos(t.text), /*add_special_tokens=*/true);
  row.labels = row.input_ids;
  return row;
}

EncodedRow Encoder::encode_row(const Conversation& c) const {
  chat::ChatInputs in = chat_inputs(c.messages, c.tools, c.chat_template_kwargs);
  auto [ids, mask] = render(in, options_.assistant_only_loss);
  EncodedRow row;
  row.labels = ids;
  if (options_.assistant_only_loss)
    for (size_t i = 0; i < ids.size(); ++i)
      if (!mask[i]) row.labels[i] = kIgnore;
  row.input_ids = std::move(ids);
  return row;
}

EncodedRow Encoder::encode_row(const PromptCompletion& pc) const {
  std::vector<int32_t> prompt_ids, ids;
  std::vector<uint8_t> assistant;
  if (pc.conversational) {
    chat::ChatInputs prompt = chat_inputs(pc.prompt_messages, pc.tools, pc.chat_template_kwargs);
    prompt.add_generation_prompt = true;
    prompt_ids = render(prompt, false).first;
    std::vector<Message> all = pc.prompt_messages;
    all.insert(all.end(), pc.completion_messages.begin(), pc.completion_messages.end());
    chat::ChatInputs full = chat_inputs(all, pc.tools, pc.chat_template_kwargs);
    std::tie(ids, assistant) = render(full, options_.assistant_only_loss);
  } else {
    reject_assistant_only(options_.assistant_only_loss, "a prompt-completion of strings");
    // TRL's add_eos goes to the completion; both are tokenized with special tokens.
    prompt_ids = tokenizer_.encode(pc.prompt, /*add_special_tokens=*/true);
    ids = tokenizer_.encode(pc.prompt + with_eos(pc.completion), /*add_special_tokens=*/true);
  }
  size_t prompt_len = common_prefix_length(prompt_ids, ids);
  EncodedRow row;
  row.prompt_not_prefix = prompt_len < prompt_ids.size();
  bool completion_only = options_.completion_only_loss.value_or(true);
  row.labels = ids;
  for (size_t i = 0; i < ids.size(); ++i) {
    bool trained = !(completion_only && i < prompt_len);
    if (!assistant.empty() && !assistant[i]) trained = false;
    if (!trained) row.labels[i] = kIgnore;
  }
  row.input_ids = std::move(ids);
  return row;
}

EncodedRow Encoder::encode_row(const Tokenized& t) const {
  reject_assistant_only(options_.assistant_only_loss, "already tokenized");
  EncodedRow row;
  row.input_ids = t.input_ids;
  if (t.labels) {
    if (t.labels->size() != t.input_ids.size())
      fail("data", "labels has " + std::to_string(t.labels->size()) + " entries but input_ids " +
                       std::to_string(t.input_ids.size()) +
                       " (hint: a tokenized row needs one label per token, -100 where untrained)");
    row.labels = *t.labels;
  } else {
    row.labels = t.input_ids;
  }
  return row;
}

}  // namespace sft::data
