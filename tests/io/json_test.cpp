#include "io/json.h"

#include <gtest/gtest.h>

namespace sft {

TEST(Json, ParsesValidJson) {
  Json j = parse_json_strict(R"({"a": [1, 2], "b": {"c": "é"}})", "test", "x.json");
  EXPECT_EQ(j["a"][1], 2);
  EXPECT_EQ(j["b"]["c"], "é");
}

TEST(Json, RejectsDuplicateKeysWithTheirPath) {
  try {
    parse_json_strict(R"({"a": {"b": 1, "b": 2}})", "test", "x.json");
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(e.kind(), JsonError::Kind::kDuplicateKey);
    EXPECT_EQ(e.detail(), "a.b");
    EXPECT_NE(std::string(e.what()).find("x.json: key 'a.b': duplicate key"), std::string::npos)
        << e.what();
  }
  // The same key in sibling objects is fine.
  EXPECT_NO_THROW(parse_json_strict(R"([{"a": 1}, {"a": 2}])", "test", "x.json"));
}

TEST(Json, ReportsSyntaxErrorsWithLineAndColumn) {
  try {
    parse_json_strict("{\n  \"a\": 1,\n  oops\n}", "test", "x.json");
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(e.kind(), JsonError::Kind::kSyntax);
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("[test] x.json: invalid JSON", 0), 0u) << e.what();
  }
}

TEST(Json, RejectsInvalidUtf8ByOffset) {
  try {
    parse_json_strict("{\"a\": \"\xFF\"}", "test", "x.json");
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(e.kind(), JsonError::Kind::kInvalidUtf8);
    EXPECT_EQ(e.detail(), "byte 7");
  }
}

TEST(Json, OrderedParseKeepsKeyOrderAndTheSameChecks) {
  const std::string text = R"({"z":1,"a":{"y":[{"q":1,"b":2}],"c":null}})";
  EXPECT_EQ(parse_ordered_json_strict(text, "test", "x.json").dump(), text);
  EXPECT_EQ(parse_json_strict(text, "test", "x.json").dump(),
            R"({"a":{"c":null,"y":[{"b":2,"q":1}]},"z":1})");
  try {
    parse_ordered_json_strict(R"({"a": [{"b": 1, "b": 2}]})", "test", "x.json");
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(e.kind(), JsonError::Kind::kDuplicateKey);
    EXPECT_EQ(e.detail(), "a.b");
  }
  try {
    parse_ordered_json_strict("{\"a\": \"\xFF\"}", "test", "x.json");
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(e.kind(), JsonError::Kind::kInvalidUtf8);
  }
  try {
    parse_ordered_json_strict("{\n  oops\n}", "test", "x.json");
    FAIL();
  } catch (const JsonError& e) {
    EXPECT_EQ(e.kind(), JsonError::Kind::kSyntax);
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(json_type_name(OrderedJson::array()), "array");
}

}  // namespace sft
