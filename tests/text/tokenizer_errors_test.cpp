// Malformed tokenizer.json → a clear "[tokenizer] <file>: <place>: ..." error, never a crash;
// text that is not UTF-8 → a clear error at encode.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "test_paths.h"
#include "text/tokenizer.h"

namespace sft::text {
namespace {

// A valid byte-level-free BPE tokenizer: vocab a, b, ab; merge "a b".
std::string minimal(const std::string& model_extra = "", const std::string& top_extra = "",
                    const std::string& merges = R"(["a b"])",
                    const std::string& vocab = R"({"a": 0, "b": 1, "ab": 2})") {
  return R"({"version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": null,
    "post_processor": null, "decoder": null)" +
         top_extra + R"(, "model": {"type": "BPE", "vocab": )" + vocab + R"(, "merges": )" +
         merges + model_extra + "}}";
}

std::string load_error(const std::string& json) {
  try {
    Tokenizer::from_json(json, "bad/tokenizer.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

void expect_error(const std::string& json, const std::string& fragment) {
  std::string msg = load_error(json);
  EXPECT_NE(msg.find("[tokenizer]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad/tokenizer.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << msg;
}

TEST(TokenizerErrors, MinimalLoadsAndMerges) {
  Tokenizer tok = Tokenizer::from_json(minimal(), "t.json");
  EXPECT_EQ(tok.encode("abab"), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{2, 0}), "ab a");  // no decoder: joined by spaces
}

TEST(TokenizerErrors, TruncatedJson) {
  std::string full = minimal();
  for (size_t cut : {size_t(0), size_t(1), full.size() / 3, full.size() / 2, full.size() - 1})
    expect_error(full.substr(0, cut), "line ");
}

TEST(TokenizerErrors, DuplicateKeys) {
  expect_error(minimal("", "", R"(["a b"])", R"({"a": 0, "a": 1})"), "duplicate key 'a'");
  expect_error(minimal(", \"merges\": []"), "duplicate key 'merges'");
}

TEST(TokenizerErrors, UnknownComponentType) {
  std::string j = minimal();
  auto swap = [&](const std::string& from, const std::string& to) {
    std::string s = j;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  expect_error(swap(R"("normalizer": null)", R"("normalizer": {"type": "Frob"})"),
               "normalizer.type: unsupported normalizer 'Frob'");
  expect_error(swap(R"("pre_tokenizer": null)", R"("pre_tokenizer": {"type": "Frob"})"),
               "unsupported pre-tokenizer 'Frob'");
  expect_error(swap(R"("decoder": null)", R"("decoder": {"type": "WordPiece"})"),
               "unsupported decoder 'WordPiece'");
  expect_error(swap(R"("post_processor": null)", R"("post_processor": {"type": "X"})"),
               "unsupported post-processor 'X'");
  expect_error(swap(R"("type": "BPE")", R"("type": "WordPiece")"),
               "unsupported model type 'WordPiece'");
  expect_error(swap(R"("type": "BPE")", R"("type": "Unigram")"), "BPE models only");
}

TEST(TokenizerErrors, MergesNamingUnknownTokens) {
  expect_error(minimal("", "", R"(["a c"])"), "model.merges[0]: token 'c' not in vocab");
  expect_error(minimal("", "", R"(["c a"])"),
               "model.merges[0]: token 'c' not in vocab");  // first token
  expect_error(minimal("", "", R"(["a b", ["b", "a"]])"), "model.merges[1]: merged token 'ba'");
  expect_error(minimal("", "", R"(["ab"])"), "not two tokens separated by a space");
  expect_error(minimal("", "", R"([["a"]])"), "model.merges[0]");
  expect_error(minimal("", "", R"([7])"), "model.merges[0]");
}

TEST(TokenizerErrors, DuplicateIds) {
  expect_error(minimal("", "", R"([])", R"({"a": 0, "b": 0})"), "id 0 is also used by");
  expect_error(minimal("", "", R"([])", R"({"a": -1})"), "expected a non-negative integer id");
  expect_error(
      minimal("", R"(, "added_tokens2": [])")
          .replace(minimal("", R"(, "added_tokens2": [])").find(R"("added_tokens": [])"), 18,
                   R"("added_tokens": [{"id": 5, "content": "<x>"}, {"id": 5, "content": "<y>"}])"),
      "used by two added tokens");
}

TEST(TokenizerErrors, BadRegex) {
  std::string j = minimal();
  j.replace(
      j.find(R"("pre_tokenizer": null)"), 21,
      R"("pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a|"}, "behavior": "Isolated", "invert": false})");
  expect_error(j, "pre_tokenizer.pattern.Regex: invalid regex /(a|/");
}

TEST(TokenizerErrors, BadFieldTypes) {
  std::string j = minimal();
  j.replace(j.find(R"("decoder": null)"), 15, R"("decoder": {"type": "Strip", "content": 5})");
  expect_error(j, "decoder.content: expected a string");
  expect_error(R"([1, 2])", "expected a JSON object at the top level");
  expect_error(R"({"model": 3})", "model: expected an object");
}

TEST(TokenizerErrors, MissingFile) {
  try {
    Tokenizer::from_file(test::fresh_output_dir("tokenizer_missing"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tokenizer.json"), std::string::npos) << e.what();
  }
}

TEST(TokenizerErrors, InvalidUtf8Input) {
  Tokenizer tok = Tokenizer::from_json(minimal(), "t.json");
  for (std::string bad :
       {std::string("a\xff"), std::string("\xc3"), std::string("ab\xed\xa0\x80")}) {
    try {
      tok.encode(bad);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sft::text
