#include "data/example.h"

namespace sft::data {

RowJson message_to_json(const Message& m) {
  // role and content lead, as in almost every dataset; the rest keep their order.
  RowJson out = {{"role", m.role}, {"content", m.content}};
  if (!m.tool_calls.is_null()) out["tool_calls"] = m.tool_calls;
  if (m.reasoning_content) out["reasoning_content"] = *m.reasoning_content;
  for (auto it = m.extra.begin(); it != m.extra.end(); ++it) out[it.key()] = it.value();
  return out;
}

RowJson message_list_to_json(const std::vector<Message>& messages) {
  RowJson out = RowJson::array();
  for (const Message& m : messages) out.push_back(message_to_json(m));
  return out;
}

}  // namespace sft::data
