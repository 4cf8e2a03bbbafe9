// JSONL / JSON / Parquet row reading: places in errors, skipping and counting bad rows,
// schemas that change between Parquet files.
#include "data/row_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "data_test_util.h"

namespace sft::data {
namespace {

using test_util::error_of;
using test_util::write_file;
using ::testing::HasSubstr;

TEST(RowReader, JsonlRowsWithBlankLinesAndCrlf) {
  auto path = write_file("jsonl_ok", "a.jsonl", "{\"text\": \"a\"}\r\n\n  \n{\"text\": \"b\"}");
  RowErrors errors(false);
  std::vector<uint64_t> lines;
  read_rows(path, errors, [&](RowJson&& row, const RowRef& where) {
    EXPECT_TRUE(row.contains("text"));
    lines.push_back(where.number);
  });
  EXPECT_EQ(lines, (std::vector<uint64_t>{1, 4}));
}

TEST(RowReader, JsonlBadLineNamesFileAndLine) {
  auto path = write_file("jsonl_bad", "a.jsonl", "{\"text\": \"a\"}\n{\"text\": oops}\n");
  RowErrors errors(false);
  std::string msg = error_of([&] { read_all_rows({path}, errors); });
  EXPECT_THAT(msg, HasSubstr("[data] " + path + ": line 2: not valid JSON"));
  EXPECT_THAT(msg, HasSubstr("--skip_invalid_rows"));
}

TEST(RowReader, SkipsAndCountsPerReason) {
  auto path = write_file("jsonl_skip", "a.jsonl",
                         "{\"text\": \"a\"}\nnot json\n[1, 2]\n{\"text\": \"\xff\"}\n"
                         "{\"a\": 1, \"a\": 2}\n{\"text\": \"b\"}\n");
  RowErrors errors(true);
  auto rows = read_all_rows({path}, errors);
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_EQ(errors.count(RowProblem::kNotJson), 2u);  // a syntax error and a duplicate key
  EXPECT_EQ(errors.count(RowProblem::kNotObject), 1u);
  EXPECT_EQ(errors.count(RowProblem::kInvalidUtf8), 1u);
  EXPECT_EQ(errors.summary(), "skipped 4 invalid rows: 2 not_json, 1 invalid_utf8, 1 not_object");
}

TEST(RowReader, JsonArrayAndDataField) {
  auto a = write_file("json_array", "a.json", "[{\"text\": \"a\"}, {\"text\": \"b\"}]");
  auto b = write_file("json_field", "b.json", "{\"data\": [{\"text\": \"c\"}]}");
  auto c = write_file("json_lines", "c.json", "{\"text\": \"d\"}\n{\"text\": \"e\"}\n");
  RowErrors errors(false);
  auto rows = read_all_rows({a, b, c}, errors);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[2]["text"], "c");
  EXPECT_EQ(rows[4]["text"], "e");
  auto bad = write_file("json_bad", "d.json", "[{\"text\": \"a\"}, 3]");
  EXPECT_THAT(error_of([&] { read_all_rows({bad}, errors); }),
              HasSubstr(bad + ": row 1: expected a JSON object, got number"));
}

// Keys in the file's order at every depth, as Python's dicts keep them (a template's tojson
// prints them so); dump() lists an object's keys in its stored order.
TEST(RowReader, KeysKeepTheFilesOrder) {
  const std::string row =
      R"({"zeta":1,"tools":[{"type":"function","function":{"name":"f","description":"d",)"
      R"("parameters":{"type":"object","properties":{"unit":{},"city":{}}}}}],"alpha":null})";
  auto jsonl = write_file("order_jsonl", "a.jsonl", row + "\n" + row + "\n");
  auto json = write_file("order_json", "b.json", "[" + row + "]");
  auto field = write_file("order_field", "c.json", "{\"data\": [" + row + "]}");
  RowErrors errors(false);
  auto rows = read_all_rows({jsonl, json, field}, errors);
  ASSERT_EQ(rows.size(), 4u);
  for (const RowJson& r : rows) EXPECT_EQ(r.dump(), row);
}

TEST(RowReader, ParquetKeysKeepTheSchemaOrder) {
  // types' columns and the fields of its list of structs are not in alphabetical order.
  RowErrors errors(false);
  auto rows = read_all_rows(
      {sft::test::source_path("tests/fixtures/parquet/types_none_plain_v1.parquet")}, errors);
  ASSERT_FALSE(rows.empty());
  std::vector<std::string> keys;
  for (auto it = rows[0].begin(); it != rows[0].end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"i32", "i64", "i8", "u32", "f32", "f64", "flag", "req",
                                            "text", "ints", "nested", "tool_calls", "lol"}));
  EXPECT_EQ(rows[0]["tool_calls"][0].dump(), R"({"name":"quote\"","args":[true]})");
}

TEST(RowReader, UnknownExtension) {
  RowErrors errors(false);
  EXPECT_THAT(error_of([&] { read_all_rows({"data.csv"}, errors); }),
              HasSubstr("use .jsonl, .json or .parquet"));
}

TEST(RowReader, ParquetFilesInOrderAndSchemaChange) {
  const std::string dir = sft::test::source_path("tests/fixtures/parquet/");
  RowErrors errors(false);
  auto rows = read_all_rows(
      {dir + "gsm8k_none_plain_v1.parquet", dir + "gsm8k_zstd_dict_v2.parquet"}, errors);
  EXPECT_EQ(rows.size(), 58u);
  std::vector<std::string> files = {dir + "gsm8k_none_plain_v1.parquet",
                                    dir + "gsm8k_other_schema.parquet"};
  std::string msg = error_of([&] { read_all_rows(files, errors); });
  EXPECT_THAT(msg, HasSubstr("gsm8k_other_schema.parquet: row 0: this file's schema (question: "
                             "string, answer: string, extra: int64) differs from that of"));
  RowErrors skipping(true);
  EXPECT_EQ(read_all_rows(files, skipping).size(), 29u);
  EXPECT_EQ(skipping.count(RowProblem::kSchemaChanged), 3u);
}

}  // namespace
}  // namespace sft::data
