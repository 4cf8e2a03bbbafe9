// The tokenizer's API beyond parity: batch encoding (same result at any thread count),
// streaming decode, pairs, vocabulary queries, split_special_tokens, tokenizer_config.json.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "core/thread_pool.h"
#include "io/json.h"
#include "test_paths.h"
#include "text/added_tokens.h"
#include "text/tokenizer.h"
#include "text/tokenizer_config.h"

namespace sft::text {
namespace {

std::string fixture(const std::string& name) {
  return test::source_path("tests/fixtures/tokenizers/" + name);
}

std::vector<std::string> some_texts() {
  std::vector<std::string> texts;
  std::ifstream in(fixture("corpus.jsonl"));
  std::string line;
  for (int i = 0; i < 600 && std::getline(in, line); ++i)
    texts.push_back(Json::parse(line).get<std::string>());
  return texts;
}

TEST(TokenizerApi, BatchMatchesSingleAtAnyThreadCount) {
  Tokenizer tok = Tokenizer::from_file(fixture("tiny_qwen"));
  auto texts = some_texts();
  std::vector<std::vector<int32_t>> expected;
  for (const auto& t : texts) expected.push_back(tok.encode(t, true));
  for (size_t threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(tok.encode_batch(texts, true, &pool), expected) << threads << " threads";
  }
  EXPECT_EQ(tok.encode_batch(texts, true), expected);
}

TEST(TokenizerApi, DecodeStreamHoldsBackPartialCharacters) {
  for (const char* name : {"tiny_qwen", "tiny_llama2", "tiny_gemma"}) {
    Tokenizer tok = Tokenizer::from_file(fixture(name));
    for (std::string text :
         {"héllo wörld 你好 👍🏽 done", "a\xF0\x9F\x98\x80\xF0\x9F\x98\x80z"}) {
      auto ids = tok.encode(text, false);
      DecodeStream stream(tok);
      std::string streamed;
      for (int32_t id : ids) {
        auto piece = stream.step(id);
        if (!piece) continue;
        EXPECT_EQ(piece->find("\xEF\xBF\xBD"), std::string::npos) << name;
        streamed += *piece;
      }
      EXPECT_EQ(streamed, tok.decode(ids)) << name << ": " << text;
    }
  }
}

TEST(TokenizerApi, PairsUseThePairTemplate) {
  Tokenizer tok = Tokenizer::from_file(fixture("tiny_gpt2"));  // <s> A </s> </s> B </s>
  int32_t s = *tok.token_to_id("<s>"), e = *tok.token_to_id("</s>");
  auto a = tok.encode("hi"), b = tok.encode("there");
  std::vector<int32_t> want{s};
  want.insert(want.end(), a.begin(), a.end());
  want.insert(want.end(), {e, e});
  want.insert(want.end(), b.begin(), b.end());
  want.push_back(e);
  EXPECT_EQ(tok.encode_pair("hi", "there"), want);
  Tokenizer llama3 = Tokenizer::from_file(fixture("tiny_llama3"));  // Sequence[ByteLevel, Template]
  int32_t bos = *llama3.token_to_id("<|begin_of_text|>");
  auto pa = llama3.encode("x"), pb = llama3.encode("y");
  std::vector<int32_t> want3{bos};
  want3.insert(want3.end(), pa.begin(), pa.end());
  want3.push_back(bos);
  want3.insert(want3.end(), pb.begin(), pb.end());
  EXPECT_EQ(llama3.encode_pair("x", "y"), want3);
}

TEST(TokenizerApi, VocabularyQueries) {
  Tokenizer tok = Tokenizer::from_file(fixture("tiny_qwen"));
  int32_t im_start = *tok.token_to_id("<|im_start|>");
  EXPECT_TRUE(tok.is_special(im_start));
  EXPECT_EQ(*tok.id_to_token(im_start), "<|im_start|>");
  EXPECT_FALSE(tok.token_to_id("definitely not a token").has_value());
  EXPECT_FALSE(tok.id_to_token(1 << 30).has_value());
  EXPECT_EQ(tok.vocab_size(), 702u);  // HF get_vocab_size(with_added_tokens=True)
  EXPECT_EQ(tok.decode(std::vector<int32_t>{1 << 30, -5}), "");  // unknown ids are skipped
}

TEST(TokenizerApi, SplitSpecialTokens) {
  Tokenizer tok = Tokenizer::from_file(fixture("tiny_qwen"));
  int32_t im_start = *tok.token_to_id("<|im_start|>");
  EXPECT_EQ(tok.encode("<|im_start|>"), std::vector<int32_t>{im_start});
  tok.set_split_special_tokens(true);
  auto split = tok.encode("<|im_start|>");
  EXPECT_GT(split.size(), 1u);
  EXPECT_EQ(tok.decode(split), "<|im_start|>");
}

TEST(TokenizerConfigTest, ReadsRealAndFixtureConfigs) {
  const std::string dir = test::fresh_output_dir("tokenizer_config");
  {
    std::ofstream(dir + "/tokenizer_config.json") << R"({
      "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
      "eos_token": "</s>", "pad_token": null, "add_bos_token": true, "add_eos_token": false,
      "model_max_length": 1000000000000000019884624838656,
      "chat_template": [{"name": "default", "template": "{{ x }}"},
                        {"name": "tool_use", "template": "{{ y }}"}]})";
  }
  TokenizerConfig c = TokenizerConfig::from_file(dir);
  EXPECT_EQ(c.bos_token, "<s>");
  EXPECT_EQ(c.eos_token, "</s>");
  EXPECT_FALSE(c.pad_token.has_value());
  EXPECT_EQ(c.add_bos_token, true);
  EXPECT_EQ(c.add_eos_token, false);
  EXPECT_FALSE(c.model_max_length.has_value());
  EXPECT_EQ(c.chat_template(), "{{ x }}");
  EXPECT_EQ(c.chat_template("tool_use"), "{{ y }}");

  std::ofstream(dir + "/tokenizer_config.json") << R"({"chat_template": 5})";
  try {
    TokenizerConfig::from_file(dir);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chat_template: expected a string"), std::string::npos);
  }

  const auto qwen_dir = test::require_shared_asset("tokenizers/qwen3");
  if (!qwen_dir) return;
  TokenizerConfig qwen = TokenizerConfig::from_file(*qwen_dir);
  EXPECT_EQ(qwen.eos_token, "<|im_end|>");
  EXPECT_TRUE(qwen.chat_template().has_value());
  EXPECT_EQ(qwen.model_max_length, 131072);
  const auto llama2_dir = test::require_shared_asset("tokenizers/llama2");
  if (!llama2_dir) return;
  TokenizerConfig llama2 = TokenizerConfig::from_file(*llama2_dir);
  EXPECT_EQ(llama2.bos_token, "<s>");
  EXPECT_EQ(llama2.add_bos_token, true);
}

}  // namespace
}  // namespace sft::text
