// Format detection (TRL's order) and per-row checks with their reasons.
#include "data/format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "data_test_util.h"

namespace sft::data {
namespace {

using test_util::error_of;
using test_util::write_file;
using ::testing::HasSubstr;

struct Read {
  DetectedFormat format;
  std::vector<Example> examples;
};

Read read(const std::string& name, const std::string& jsonl, RowErrors& errors,
          FormatOptions options = {}) {
  auto path = write_file(name, "d.jsonl", jsonl);
  Read r;
  r.format = read_examples({path}, options, errors,
                           [&](Example&& e, const RowRef&) { r.examples.push_back(std::move(e)); });
  return r;
}

TEST(Format, LanguageModelingWithCustomField) {
  RowErrors errors(false);
  FormatOptions options;
  options.text_field = "body";
  auto r = read("lm", "{\"body\": \"hello\", \"id\": 1}\n", errors, options);
  EXPECT_EQ(r.format.format, DatasetFormat::kLanguageModeling);
  ASSERT_EQ(r.examples.size(), 1u);
  EXPECT_EQ(std::get<Text>(r.examples[0]).text, "hello");
}

TEST(Format, ConversationalWithToolsAndReasoning) {
  RowErrors errors(false);
  auto r =
      read("conv",
           R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},)"
           R"( {"role": "assistant", "content": null, "tool_calls": [{"type": "function"}]},)"
           R"( {"role": "tool", "content": "42", "name": "calc"},)"
           R"( {"role": "assistant", "content": "a", "reasoning_content": "think"}],)"
           R"( "tools": "[{\"type\": \"function\"}]"})"
           "\n",
           errors);
  EXPECT_EQ(r.format.format, DatasetFormat::kConversational);
  const auto& c = std::get<Conversation>(r.examples.at(0));
  ASSERT_EQ(c.messages.size(), 5u);
  EXPECT_TRUE(c.messages[2].content.is_null());
  EXPECT_EQ(c.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(c.messages[3].extra["name"], "calc");
  EXPECT_EQ(c.messages[4].reasoning_content, "think");
  EXPECT_EQ(c.tools, RowJson::parse(R"([{"type": "function"}])"));  // a JSON string is parsed
  EXPECT_EQ(message_to_json(c.messages[3]),
            RowJson::parse(R"({"role": "tool", "content": "42", "name": "calc"})"));
}

TEST(Format, PromptCompletionStringsAndMessages) {
  RowErrors errors(false);
  auto s = read("pc_str", "{\"prompt\": \"1+1=\", \"completion\": \"2\"}\n", errors);
  EXPECT_EQ(s.format.format, DatasetFormat::kPromptCompletion);
  EXPECT_FALSE(s.format.conversational);
  EXPECT_EQ(std::get<PromptCompletion>(s.examples.at(0)).completion, "2");
  auto m = read(
      "pc_msg",
      R"({"prompt": [{"role": "user", "content": "q"}], "completion": [{"role": "assistant", "content": "a"}]})"
      "\n",
      errors);
  EXPECT_TRUE(m.format.conversational);
  EXPECT_EQ(std::get<PromptCompletion>(m.examples.at(0)).completion_messages.at(0).role,
            "assistant");
}

TEST(Format, Gsm8kColumnMappingOnParquet) {
  RowErrors errors(false);
  FormatOptions options;
  options.columns = parse_column_mapping("prompt=question,completion=answer");
  std::vector<Example> examples;
  auto f =
      read_examples({sft::test::source_path("tests/fixtures/parquet/gsm8k_snappy_dict_v2.parquet")},
                    options, errors, [&](Example&& e, const RowRef&) { examples.push_back(e); });
  EXPECT_EQ(f.format, DatasetFormat::kPromptCompletion);
  ASSERT_EQ(examples.size(), 29u);
  EXPECT_THAT(std::get<PromptCompletion>(examples[0]).completion, HasSubstr("\n#### "));
}

TEST(Format, CapybaraParquetIsConversational) {
  RowErrors errors(false);
  size_t n = 0;
  auto f = read_examples(
      {sft::test::source_path("tests/fixtures/parquet/capybara_gzip_plain_v1.parquet")}, {}, errors,
      [&](Example&& e, const RowRef&) {
        EXPECT_GE(std::get<Conversation>(e).messages.size(), 2u);
        ++n;
      });
  EXPECT_EQ(f.format, DatasetFormat::kConversational);
  EXPECT_EQ(n, 37u);
}

TEST(Format, ShareGptRolesAreMapped) {
  RowErrors errors(false);
  auto r = read(
      "sharegpt",
      R"({"conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]})"
      "\n",
      errors);
  EXPECT_TRUE(r.format.sharegpt);
  const auto& c = std::get<Conversation>(r.examples.at(0));
  EXPECT_EQ(c.messages[0].role, "system");
  EXPECT_EQ(c.messages[1].role, "user");
  EXPECT_EQ(c.messages[2].role, "assistant");
  EXPECT_EQ(c.messages[2].content, "a");
}

TEST(Format, BadRowsNameFileLineAndReason) {
  const std::string first = R"({"messages": [{"role": "user", "content": "q"}]})";
  struct Case {
    std::string line;
    RowProblem problem;
    std::string message;
  };
  std::vector<Case> cases = {
      {R"({"text": "no messages"})", RowProblem::kMissingField, "no 'messages' field"},
      {R"({"messages": "hi"})", RowProblem::kWrongType, "'messages' is string, expected a list"},
      {R"({"messages": []})", RowProblem::kEmptyMessages, "'messages' has no messages"},
      {R"({"messages": [{"role": "narrator", "content": "x"}]})", RowProblem::kUnknownRole,
       "messages[0] has role 'narrator'"},
      {R"({"messages": [{"content": "x"}]})", RowProblem::kMissingField,
       "messages[0] has no 'role'"},
      {R"({"messages": [{"role": "user"}]})", RowProblem::kMissingField,
       "messages[0] has no 'content'"},
      {R"({"messages": [{"role": "user", "content": 3}]})", RowProblem::kWrongType,
       "messages[0].content is number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    RowErrors strict(false);
    std::string msg = error_of([&] { read("bad_row", first + "\n" + c.line + "\n", strict); });
    EXPECT_THAT(msg, HasSubstr("d.jsonl: line 2: " + c.message));
    RowErrors skipping(true);
    auto r = read("bad_row", first + "\n" + c.line + "\n" + first + "\n", skipping);
    EXPECT_EQ(r.examples.size(), 2u);
    EXPECT_EQ(skipping.count(c.problem), 1u);
    EXPECT_EQ(skipping.total(), 1u);
  }
}

TEST(Format, InvalidUtf8InParquetStyleRow) {
  // JSONL rejects it while parsing; rows from Parquet are checked when converted.
  RowErrors errors(true);
  std::string file = "x.parquet";
  auto e = to_example(RowJson{{"text", std::string("ok \xc3\x28")}}, DetectedFormat{}, {},
                      RowRef{&file, 7, false}, errors);
  EXPECT_FALSE(e.has_value());
  EXPECT_EQ(errors.count(RowProblem::kInvalidUtf8), 1u);
  RowErrors strict(false);
  EXPECT_THAT(error_of([&] {
                to_example(RowJson{{"text", std::string("ok \xc3\x28")}}, DetectedFormat{}, {},
                           RowRef{&file, 7, false}, strict);
              }),
              HasSubstr("x.parquet: row 7: invalid UTF-8 in 'text' at byte 3"));
}

TEST(Format, UndetectableAndMappingErrors) {
  RowErrors errors(false);
  EXPECT_THAT(
      error_of([&] { read("undetectable", "{\"question\": \"q\"}\n", errors); }),
      HasSubstr("line 1: cannot tell the dataset format from the first row (columns: question)"));
  EXPECT_THAT(error_of([] { parse_column_mapping("prompt"); }), HasSubstr("is not target=source"));
  FormatOptions options;
  options.columns = parse_column_mapping("text=body");
  EXPECT_THAT(error_of([&] { read("mapping", "{\"text\": \"q\"}\n", errors, options); }),
              HasSubstr("line 1: no 'body' column to read as 'text'"));
}

TEST(Format, Tokenized) {
  RowErrors errors(false);
  auto r = read("tok", "{\"input_ids\": [1, 2, 3], \"labels\": [-100, 2, 3]}\n", errors);
  EXPECT_EQ(r.format.format, DatasetFormat::kTokenized);
  EXPECT_EQ(std::get<Tokenized>(r.examples.at(0)).labels->at(0), -100);
}

}  // namespace
}  // namespace sft::data
