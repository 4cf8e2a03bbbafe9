#include "data/example.h"

namespace sft::data {

Json message_to_json(const Message& m) {
  Json out = m.extra;
  out["role"] = m.role;
  out["content"] = m.content;
  if (!m.tool_calls.is_null()) out["tool_calls"] = m.tool_calls;
  if (m.reasoning_content) out["reasoning_content"] = *m.reasoning_content;
  return out;
}

Json message_list_to_json(const std::vector<Message>& messages) {
  Json out = Json::array();
  for (const Message& m : messages) out.push_back(message_to_json(m));
  return out;
}

}  // namespace sft::data
