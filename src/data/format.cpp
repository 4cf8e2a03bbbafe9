#include "data/format.h"

#include <limits>

#include "core/utf8.h"

namespace sft::data {

namespace {

// A row that does not fit: thrown by the helpers below, reported once by to_example.
struct RowIssue {
  RowProblem problem;
  std::string message;
};

[[noreturn]] void issue(RowProblem p, std::string message) {
  throw RowIssue{p, std::move(message)};
}

bool present(const RowJson& row, const std::string& key) {
  auto it = row.find(key);
  return it != row.end() && !it->is_null();
}

// TRL's test: a non-empty list whose first element is an object with a "role".
bool looks_conversational(const RowJson& v) {
  return v.is_array() && !v.empty() && v[0].is_object() && v[0].contains("role");
}

bool looks_sharegpt(const RowJson& row) {
  auto it = row.find("conversations");
  return it != row.end() && it->is_array() && !it->empty() && (*it)[0].is_object() &&
         (*it)[0].contains("from") && (*it)[0].contains("value");
}

void check_utf8(const RowJson& v, const std::string& path) {
  if (v.is_string()) {
    if (auto bad = find_invalid_utf8(v.get_ref<const std::string&>()))
      issue(RowProblem::kInvalidUtf8,
            "invalid UTF-8 in '" + path + "' at byte " + std::to_string(*bad));
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) check_utf8(v[i], path + "[" + std::to_string(i) + "]");
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (auto bad = find_invalid_utf8(it.key()))
        issue(RowProblem::kInvalidUtf8,
              "invalid UTF-8 in a key of '" + path + "' at byte " + std::to_string(*bad));
      check_utf8(it.value(), path.empty() ? it.key() : path + "." + it.key());
    }
  }
}

std::string take_string(RowJson& row, const std::string& key) {
  auto it = row.find(key);
  if (it == row.end() || it->is_null()) issue(RowProblem::kMissingField, "no '" + key + "' field");
  if (!it->is_string())
    issue(RowProblem::kWrongType,
          "'" + key + "' is " + json_type_name(*it) + ", expected a string");
  return std::move(it->get_ref<std::string&>());
}

const char* map_sharegpt_role(const std::string& role) {
  if (role == "human") return "user";
  if (role == "gpt") return "assistant";
  return nullptr;
}

bool known_role(const std::string& role) {
  return role == "system" || role == "developer" || role == "user" || role == "assistant" ||
         role == "tool";
}

Message to_message(RowJson&& m, bool sharegpt, const std::string& where) {
  if (!m.is_object())
    issue(RowProblem::kWrongType, where + " is " + json_type_name(m) + ", expected an object");
  if (sharegpt) {
    if (m.contains("from")) m["role"] = std::move(m["from"]), m.erase("from");
    if (m.contains("value")) m["content"] = std::move(m["value"]), m.erase("value");
  }
  Message out;
  auto role = m.find("role");
  if (role == m.end() || role->is_null())
    issue(RowProblem::kMissingField, where + " has no 'role'");
  if (!role->is_string())
    issue(RowProblem::kWrongType,
          where + ".role is " + json_type_name(*role) + ", expected a string");
  out.role = role->get<std::string>();
  if (sharegpt)
    if (const char* mapped = map_sharegpt_role(out.role)) out.role = mapped;
  if (!known_role(out.role))
    issue(RowProblem::kUnknownRole, where + " has role '" + out.role +
                                        "' (expected system, developer, user, assistant or tool" +
                                        (sharegpt ? "; ShareGPT's human and gpt are mapped" : "") +
                                        ")");
  m.erase("role");
  if (auto it = m.find("tool_calls"); it != m.end()) {
    if (!it->is_null() && !it->is_array())
      issue(RowProblem::kWrongType,
            where + ".tool_calls is " + json_type_name(*it) + ", expected a list");
    out.tool_calls = std::move(*it);
    m.erase(it);
  }
  if (auto it = m.find("reasoning_content"); it != m.end()) {
    if (it->is_string()) {
      out.reasoning_content = it->get<std::string>();
    } else if (!it->is_null()) {
      issue(RowProblem::kWrongType,
            where + ".reasoning_content is " + json_type_name(*it) + ", expected a string");
    }
    m.erase(it);
  }
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    // An assistant turn that only calls tools has no content.
    if (out.tool_calls.is_null()) issue(RowProblem::kMissingField, where + " has no 'content'");
  } else if (!content->is_string() && !content->is_array()) {
    issue(RowProblem::kWrongType,
          where + ".content is " + json_type_name(*content) + ", expected a string");
  }
  if (content != m.end()) {
    out.content = std::move(*content);
    m.erase(content);
  }
  out.extra = std::move(m);
  return out;
}

std::vector<Message> take_messages(RowJson& row, const std::string& key, bool sharegpt) {
  auto it = row.find(key);
  if (it == row.end() || it->is_null()) issue(RowProblem::kMissingField, "no '" + key + "' field");
  if (!it->is_array())
    issue(RowProblem::kWrongType,
          "'" + key + "' is " + json_type_name(*it) + ", expected a list of messages");
  if (it->empty()) issue(RowProblem::kEmptyMessages, "'" + key + "' has no messages");
  std::vector<Message> out;
  out.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i)
    out.push_back(to_message(std::move((*it)[i]), sharegpt, key + "[" + std::to_string(i) + "]"));
  return out;
}

RowJson take_tools(RowJson& row) {
  auto it = row.find("tools");
  if (it == row.end() || it->is_null()) return nullptr;
  RowJson tools = std::move(*it);
  if (tools.is_string()) {  // TRL json.loads a string column (how Parquet files often hold them)
    try {
      tools = parse_ordered_json_strict(tools.get_ref<const std::string&>(), "data", "tools");
    } catch (const Error& e) {
      issue(RowProblem::kWrongType,
            std::string("'tools' is a string that is not JSON: ") + e.what());
    }
  }
  if (!tools.is_array())
    issue(RowProblem::kWrongType, "'tools' is " + json_type_name(tools) + ", expected a list");
  return tools;
}

RowJson take_kwargs(RowJson& row) {
  auto it = row.find("chat_template_kwargs");
  if (it == row.end() || it->is_null()) return nullptr;
  if (!it->is_object())
    issue(RowProblem::kWrongType,
          "'chat_template_kwargs' is " + json_type_name(*it) + ", expected an object");
  return std::move(*it);
}

std::vector<int32_t> take_ids(RowJson& row, const std::string& key) {
  auto it = row.find(key);
  if (it == row.end() || it->is_null()) issue(RowProblem::kMissingField, "no '" + key + "' field");
  if (!it->is_array())
    issue(RowProblem::kWrongType,
          "'" + key + "' is " + json_type_name(*it) + ", expected a list of token ids");
  std::vector<int32_t> ids;
  ids.reserve(it->size());
  for (const RowJson& v : *it) {
    if (!v.is_number_integer() || v.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
        v.get<int64_t>() > std::numeric_limits<int32_t>::max())
      issue(RowProblem::kWrongType,
            "'" + key + "' holds " + v.dump() + ", expected 32-bit integers");
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

Example convert(RowJson& row, const DetectedFormat& f, const FormatOptions& options) {
  switch (f.format) {
    case DatasetFormat::kTokenized: {
      Tokenized t;
      t.input_ids = take_ids(row, "input_ids");
      if (present(row, "labels")) {
        t.labels = take_ids(row, "labels");
        if (t.labels->size() != t.input_ids.size())
          issue(RowProblem::kWrongType, "'labels' and 'input_ids' differ in length");
      }
      return t;
    }
    case DatasetFormat::kConversational: {
      Conversation c;
      c.messages = take_messages(row, f.sharegpt ? "conversations" : "messages", f.sharegpt);
      c.tools = take_tools(row);
      c.chat_template_kwargs = take_kwargs(row);
      return c;
    }
    case DatasetFormat::kPromptCompletion: {
      PromptCompletion pc;
      pc.conversational = f.conversational;
      if (f.conversational) {
        pc.prompt_messages = take_messages(row, "prompt", f.sharegpt);
        pc.completion_messages = take_messages(row, "completion", f.sharegpt);
      } else {
        pc.prompt = take_string(row, "prompt");
        pc.completion = take_string(row, "completion");
      }
      pc.tools = take_tools(row);
      pc.chat_template_kwargs = take_kwargs(row);
      return pc;
    }
    case DatasetFormat::kLanguageModeling:
      return Text{take_string(row, options.text_field)};
  }
  return Text{};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_column_mapping(const std::string& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t start = 0;
  while (start <= spec.size() && !spec.empty()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(start, end - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      fail("data", "column mapping '" + spec + "': '" + item +
                       "' is not target=source (hint: --dataset_columns "
                       "prompt=question,completion=answer)");
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    start = end + 1;
  }
  return out;
}

const char* format_name(const DetectedFormat& f) {
  switch (f.format) {
    case DatasetFormat::kLanguageModeling:
      return "language modeling";
    case DatasetFormat::kConversational:
      return f.sharegpt ? "conversational (ShareGPT)" : "conversational";
    case DatasetFormat::kPromptCompletion:
      return f.conversational ? "prompt-completion (conversational)" : "prompt-completion";
    case DatasetFormat::kTokenized:
      return "tokenized";
  }
  return "unknown";
}

bool apply_column_mapping(RowJson& row, const FormatOptions& options, const RowRef& where,
                          RowErrors& errors) {
  for (const auto& [target, source] : options.columns) {
    auto it = row.find(source);
    if (it == row.end()) {
      errors.report(RowProblem::kMissingField, where,
                    "no '" + source + "' column to read as '" + target + "'");
      return false;
    }
    RowJson value = std::move(*it);
    row.erase(it);
    row[target] = std::move(value);
  }
  return true;
}

DetectedFormat detect_format(const RowJson& row, const FormatOptions& options,
                             const RowRef& where) {
  DetectedFormat f;
  if (row.contains("input_ids")) {
    f.format = DatasetFormat::kTokenized;
  } else if (looks_sharegpt(row)) {
    f.format = DatasetFormat::kConversational;
    f.sharegpt = true;
  } else if (row.contains("prompt")) {
    f.format = DatasetFormat::kPromptCompletion;
    f.conversational = looks_conversational(row["prompt"]);
  } else if (row.contains("messages") && looks_conversational(row["messages"])) {
    f.format = DatasetFormat::kConversational;
  } else if (row.contains(options.text_field)) {
    f.format = DatasetFormat::kLanguageModeling;
  } else {
    std::string columns;
    for (auto it = row.begin(); it != row.end(); ++it)
      columns += (columns.empty() ? "" : ", ") + it.key();
    fail_in_file(
        "data", where.location(),
        "cannot tell the dataset format from the first row (columns: " + columns + "); expected '" +
            options.text_field +
            "', 'messages', 'prompt'+'completion', ShareGPT 'conversations' or 'input_ids'",
        "map your columns with --dataset_columns (e.g. prompt=question,completion=answer) "
        "or name the text column with --dataset_text_field");
  }
  return f;
}

std::optional<Example> to_example(RowJson&& row, const DetectedFormat& format,
                                  const FormatOptions& options, const RowRef& where,
                                  RowErrors& errors) {
  try {
    check_utf8(row, "");
    return convert(row, format, options);
  } catch (const RowIssue& e) {
    errors.report(e.problem, where, e.message + " (the dataset is " + format_name(format) + ")");
    return std::nullopt;
  }
}

DetectedFormat read_examples(const std::vector<std::string>& paths, const FormatOptions& options,
                             RowErrors& errors, const ExampleVisitor& visit) {
  return read_examples([&paths](RowErrors& e, const RowVisitor& v) { read_rows(paths, e, v); },
                       options, errors, visit);
}

DetectedFormat read_examples(const RowSource& rows, const FormatOptions& options, RowErrors& errors,
                             const ExampleVisitor& visit) {
  std::optional<DetectedFormat> format;
  rows(errors, [&](RowJson&& row, const RowRef& where) {
    if (!apply_column_mapping(row, options, where, errors)) return;
    if (!format) format = detect_format(row, options, where);
    if (auto example = to_example(std::move(row), *format, options, where, errors))
      visit(std::move(*example), where);
  });
  return format.value_or(DetectedFormat{});
}

}  // namespace sft::data
