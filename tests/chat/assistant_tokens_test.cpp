// Token-level assistant masks against transformers: apply_chat_template(tokenize=True,
// return_dict=True, return_assistant_tokens_mask=True) with chatml_generation.jinja, for
// tiny fixture tokenizers and real ones from ../shared (test_paths.h), must give the same
// input_ids and assistant_masks (tools/make_chat_mask_goldens.py).
#include <gtest/gtest.h>

#include "chat/assistant_tokens.h"
#include "io/mapped_file.h"
#include "test_paths.h"

namespace sft::chat {
namespace {

using OJ = jinja::OrderedJson;

const OJ& goldens() {
  static const OJ g = parse_ordered_json(
      read_text_file(test::source_path("tests/fixtures/chat_masks/goldens.json"), "test"),
      "chat_masks/goldens.json");
  return g;
}

std::string mask_text(const std::vector<uint8_t>& mask) {
  std::string s;
  for (uint8_t m : mask) s += m ? '1' : '0';
  return s;
}

void check_tokenizer(const std::string& name, const std::string& tokenizer_path) {
  const OJ& g = goldens();
  ChatTemplate tmpl = ChatTemplate::from_file(
      test::source_path("tests/fixtures/chat_templates/" + g["template"].get<std::string>()), {});
  text::Tokenizer tok = text::Tokenizer::from_file(tokenizer_path);
  const OJ& results = g["tokenizers"][name]["results"];
  ASSERT_EQ(results.size(), g["cases"].size());
  int compared = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const OJ& r = results[i];
    if (!r.contains("input_ids")) continue;
    const OJ& c = g["cases"][i];
    ChatInputs in;
    in.messages = c["messages"];
    if (c.contains("tools")) in.tools = c["tools"];
    in.add_generation_prompt = c.value("add_generation_prompt", false);
    AssistantTokens t = assistant_token_mask(tmpl, in, tok);
    EXPECT_EQ(t.method, MaskMethod::kGenerationBlocks);
    EXPECT_EQ(t.ids, r["input_ids"].get<std::vector<int32_t>>()) << name << " " << c["id"];
    EXPECT_EQ(mask_text(t.mask), r["assistant_masks"].get<std::string>()) << name << " " << c["id"];
    ++compared;
  }
  EXPECT_GE(compared, 20) << name;
}

// A template without generation blocks (chatml.jinja, prefix rendering) that renders the
// same text must give the same token masks.
TEST(AssistantTokens, PrefixRenderingGivesTransformersMasks) {
  const OJ& g = goldens();
  ChatTemplate tmpl =
      ChatTemplate::from_file(test::source_path("tests/fixtures/chat_templates/chatml.jinja"), {});
  text::Tokenizer tok =
      text::Tokenizer::from_file(test::source_path("tests/fixtures/tokenizers/tiny_qwen"));
  const OJ& results = g["tokenizers"]["tiny_qwen"]["results"];
  int compared = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const OJ& c = g["cases"][i];
    if (!results[i].contains("input_ids")) continue;
    ChatInputs in;
    in.messages = c["messages"];
    if (c.contains("tools")) in.tools = c["tools"];
    in.add_generation_prompt = c.value("add_generation_prompt", false);
    AssistantTokens t = assistant_token_mask(tmpl, in, tok);
    if (t.ids != results[i]["input_ids"].get<std::vector<int32_t>>()) continue;  // other text
    EXPECT_EQ(t.method, MaskMethod::kPrefixRendering);
    EXPECT_EQ(mask_text(t.mask), results[i]["assistant_masks"].get<std::string>()) << c["id"];
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

class TinyMasks : public ::testing::TestWithParam<const char*> {};

TEST_P(TinyMasks, MatchTransformers) {
  std::string name = GetParam();
  check_tokenizer(name, test::source_path("tests/fixtures/tokenizers/" + name));
}

INSTANTIATE_TEST_SUITE_P(AssistantTokens, TinyMasks,
                         ::testing::Values("tiny_qwen", "tiny_llama2", "tiny_metaspace"));

class RealMasks : public ::testing::TestWithParam<const char*> {};

TEST_P(RealMasks, MatchTransformers) {
  std::string name = GetParam();
  const auto dir = test::require_shared_asset("tokenizers/" + name);
  if (!dir) return;
  check_tokenizer(name, *dir);
}

INSTANTIATE_TEST_SUITE_P(AssistantTokens, RealMasks, ::testing::Values("qwen3", "llama3_1"));

}  // namespace
}  // namespace sft::chat
