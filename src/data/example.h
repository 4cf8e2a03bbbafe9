// The typed rows the encoder consumes, one per dataset format TRL's SFTTrainer knows:
//
//   Text             language modeling: one string (`text` or --dataset_text_field)
//   Conversation     `messages` (role/content, tool_calls, reasoning_content) + `tools`
//   PromptCompletion `prompt` + `completion`, both strings or both message lists
//   Tokenized        already tokenized rows (`input_ids`, optional `labels`), used as is
//
// Messages keep every key they came with (name, tool_call_id, ...) so a chat template sees
// what transformers' apply_chat_template would see; message_list_to_json gives it back.
// JSON values are RowJson (row_json.h): keys in the dataset's order, down to tool schemas
// and tool-call arguments, so a template's tojson prints what Python prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "data/row_json.h"

namespace sft::data {

struct Message {
  std::string role;    // system, developer, user, assistant or tool
  RowJson content;     // a string, null (assistant turns with tool_calls) or a list of parts
  RowJson tool_calls;  // null when absent
  std::optional<std::string> reasoning_content;
  RowJson extra = RowJson::object();  // every other key, as given
};

struct Text {
  std::string text;
};

struct Conversation {
  std::vector<Message> messages;
  RowJson tools;                 // a list of tool schemas, or null
  RowJson chat_template_kwargs;  // an object, or null
};

struct PromptCompletion {
  bool conversational = false;
  std::string prompt, completion;                             // when !conversational
  std::vector<Message> prompt_messages, completion_messages;  // when conversational
  RowJson tools;
  RowJson chat_template_kwargs;
};

struct Tokenized {
  std::vector<int32_t> input_ids;
  std::optional<std::vector<int32_t>> labels;  // -100 = not trained
};

using Example = std::variant<Text, Conversation, PromptCompletion, Tokenized>;

// The message as an object (role, content, tool_calls, reasoning_content, extra keys).
RowJson message_to_json(const Message& m);
RowJson message_list_to_json(const std::vector<Message>& messages);

}  // namespace sft::data
