// Encoder rules that the TRL goldens do not exercise: its errors (EOS not in the vocabulary,
// no EOS, no chat template, no assistant token, labels of the wrong length), the optional
// double-BOS fix and the prompt_not_prefix flag. Uses the tiny fixture tokenizers, so it
// runs without ../shared.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "data/encode.h"
#include "data_test_util.h"

namespace sft::data {
namespace {

using test_util::error_of;
using ::testing::HasSubstr;

text::Tokenizer tiny(const std::string& name) {
  return text::Tokenizer::from_file(test::source_path("tests/fixtures/tokenizers/" + name));
}

chat::ChatTemplate generation_template() {
  return chat::ChatTemplate::from_file(
      test::source_path("tests/fixtures/chat_templates/chatml_generation.jinja"),
      {std::nullopt, std::string("<|im_end|>"), std::nullopt, std::nullopt});
}

Message msg(const std::string& role, const std::string& content) {
  Message m;
  m.role = role;
  m.content = content;
  return m;
}

EncodeOptions with_eos(const std::string& eos) {
  EncodeOptions o;
  o.tokenizer_eos_token = eos;
  return o;
}

TEST(Encode, EosTokenNotInVocabularyIsAnError) {
  text::Tokenizer tok = tiny("tiny_qwen");
  EncodeOptions o = with_eos("<|im_end|>");
  o.eos_token = "<|not_a_token|>";
  std::string err = error_of([&] { Encoder(tok, nullptr, o); });
  EXPECT_THAT(err, HasSubstr("[data]"));
  EXPECT_THAT(err, HasSubstr("--eos_token '<|not_a_token|>' is not in the vocabulary"));
}

TEST(Encode, EosTokenOverrideIsAppended) {
  text::Tokenizer tok = tiny("tiny_qwen");
  EncodeOptions o = with_eos("<|im_end|>");
  o.eos_token = "<|endoftext|>";
  Encoder enc(tok, nullptr, o);
  EXPECT_EQ(enc.eos_token(), "<|endoftext|>");
  EXPECT_EQ(enc.eos_token_id(), *tok.token_to_id("<|endoftext|>"));
  EncodedRow row = enc.encode(Text{"hello"});
  ASSERT_FALSE(row.input_ids.empty());
  EXPECT_EQ(row.input_ids.back(), enc.eos_token_id());
  EXPECT_EQ(row.labels, row.input_ids);
  // Not appended twice.
  EXPECT_EQ(enc.encode(Text{"hello<|endoftext|>"}).input_ids, row.input_ids);
}

TEST(Encode, TextRowWithoutAnyEosIsAnError) {
  text::Tokenizer tok = tiny("tiny_qwen");
  Encoder enc(tok, nullptr, {});
  EXPECT_THAT(error_of([&] { enc.encode(Text{"hello"}); }), HasSubstr("no EOS token"));
  // A tokenized row needs none.
  EXPECT_EQ(enc.encode(Tokenized{{5, 6}, std::nullopt}).labels, (std::vector<int32_t>{5, 6}));
}

TEST(Encode, ConversationWithoutTemplateIsAnError) {
  text::Tokenizer tok = tiny("tiny_qwen");
  Encoder enc(tok, nullptr, with_eos("<|im_end|>"));
  Conversation c;
  c.messages = {msg("user", "hi"), msg("assistant", "hello")};
  std::string err = error_of([&] { enc.encode(c); });
  EXPECT_THAT(err, HasSubstr("needs a chat template"));
  EXPECT_THAT(err, HasSubstr("--chat_template_path"));
}

TEST(Encode, AssistantOnlyLossWithoutAssistantTokenIsAnError) {
  text::Tokenizer tok = tiny("tiny_qwen");
  chat::ChatTemplate tmpl = generation_template();
  EncodeOptions o = with_eos("<|im_end|>");
  o.assistant_only_loss = true;
  Encoder enc(tok, &tmpl, o);
  Conversation c;
  c.messages = {msg("user", "hi")};
  std::string err = error_of([&] { enc.encode(c); });
  EXPECT_THAT(err, HasSubstr("no assistant token"));
  EXPECT_THAT(err, HasSubstr("{% generation %}"));

  c.messages.push_back(msg("assistant", "hello"));
  EncodedRow row = enc.encode(c);
  size_t trained = 0;
  for (int32_t l : row.labels) trained += l != -100;
  EXPECT_GT(trained, 0u);
  EXPECT_LT(trained, row.labels.size());
}

TEST(Encode, AssistantOnlyLossNeedsConversationalRows) {
  text::Tokenizer tok = tiny("tiny_qwen");
  EncodeOptions o = with_eos("<|im_end|>");
  o.assistant_only_loss = true;
  Encoder enc(tok, nullptr, o);
  EXPECT_THAT(error_of([&] { enc.encode(Text{"hi"}); }),
              HasSubstr("assistant_only_loss needs conversational rows, and this row is text"));
  PromptCompletion pc;
  pc.prompt = "a";
  pc.completion = "b";
  EXPECT_THAT(error_of([&] { enc.encode(pc); }), HasSubstr("prompt-completion of strings"));
  EXPECT_THAT(error_of([&] {
                enc.encode(Tokenized{{1}, std::nullopt});
              }),
              HasSubstr("already tokenized"));
}

TEST(Encode, TokenizedLabelsOfTheWrongLengthAreAnError) {
  text::Tokenizer tok = tiny("tiny_qwen");
  Encoder enc(tok, nullptr, {});
  EXPECT_THAT(error_of([&] {
                enc.encode(Tokenized{{1, 2, 3}, std::vector<int32_t>{1, 2}});
              }),
              HasSubstr("labels has 2 entries but input_ids 3"));
}

TEST(Encode, DoubleBosIsKeptAsTrlDoesOrFixedOnRequest) {
  text::Tokenizer tok = tiny("tiny_llama3");
  int32_t bos = *tok.token_to_id("<|begin_of_text|>");
  Text t{"<|begin_of_text|>hello"};

  Encoder keep(tok, nullptr, with_eos("<|eot_id|>"));
  EncodedRow kept = keep.encode(t);
  ASSERT_GE(kept.input_ids.size(), 3u);
  EXPECT_EQ(kept.input_ids[0], bos);
  EXPECT_EQ(kept.input_ids[1], bos);
  EXPECT_TRUE(kept.double_bos);
  EXPECT_FALSE(kept.double_bos_fixed);
  EXPECT_FALSE(keep.encode(Text{"hello"}).double_bos);

  EncodeOptions o = with_eos("<|eot_id|>");
  o.fix_double_bos = true;
  EncodedRow fixed = Encoder(tok, nullptr, o).encode(t);
  EXPECT_TRUE(fixed.double_bos_fixed);
  EXPECT_EQ(fixed.input_ids,
            std::vector<int32_t>(kept.input_ids.begin() + 1, kept.input_ids.end()));
  EXPECT_EQ(fixed.labels, fixed.input_ids);
}

TEST(Encode, PromptCompletionMasksThePromptAndFlagsMergedBoundaries) {
  text::Tokenizer tok = tiny("tiny_qwen");
  Encoder enc(tok, nullptr, with_eos("<|im_end|>"));
  PromptCompletion pc;
  pc.prompt = "The capital of France is";
  pc.completion = " Paris.";
  EncodedRow row = enc.encode(pc);
  std::vector<int32_t> prompt_ids = tok.encode(pc.prompt, true);
  EXPECT_FALSE(row.prompt_not_prefix);
  ASSERT_GT(row.input_ids.size(), prompt_ids.size());
  for (size_t i = 0; i < row.input_ids.size(); ++i)
    EXPECT_EQ(row.labels[i], i < prompt_ids.size() ? -100 : row.input_ids[i]) << i;
  EXPECT_EQ(row.input_ids.back(), *tok.token_to_id("<|im_end|>"));

  // The prompt's trailing space joins the completion's first word (" the" is one token),
  // so the prompt's last token is not in prompt+completion.
  pc.prompt = "The capital of France is ";
  pc.completion = "the end";
  row = enc.encode(pc);
  prompt_ids = tok.encode(pc.prompt, true);
  std::vector<int32_t> full = tok.encode(pc.prompt + pc.completion + "<|im_end|>", true);
  size_t common = 0;
  while (common < prompt_ids.size() && prompt_ids[common] == full[common]) ++common;
  ASSERT_LT(common, prompt_ids.size()) << "the fixture no longer merges across the boundary";
  EXPECT_TRUE(row.prompt_not_prefix);
  EXPECT_EQ(row.labels[common - 1], -100);
  EXPECT_EQ(row.labels[common], row.input_ids[common]);

  // completion_only_loss=false trains everything.
  EncodeOptions o = with_eos("<|im_end|>");
  o.completion_only_loss = false;
  EXPECT_EQ(Encoder(tok, nullptr, o).encode(pc).labels, full);
}

}  // namespace
}  // namespace sft::data
