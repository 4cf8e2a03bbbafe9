// Assistant masks: the two methods agree where both apply; prefix rendering refuses
// templates that rewrite earlier turns; token masks follow from byte offsets.
#include <gtest/gtest.h>

#include "chat/assistant_mask.h"
#include "io/mapped_file.h"
#include "test_paths.h"

namespace sft::chat {
namespace {

using OJ = jinja::OrderedJson;

ChatTemplate fixture(const std::string& name) {
  SpecialTokens t;
  t.bos = "<s>";
  t.eos = "</s>";
  t.unk = "<unk>";
  return ChatTemplate::from_file(test::source_path("tests/fixtures/chat_templates/" + name), t);
}

const OJ& golden_cases() {
  static const OJ g = parse_ordered_json(
      read_text_file(test::source_path("tests/fixtures/chat_templates/goldens.json"), "test"),
      "goldens.json")["cases"];
  return g;
}

ChatInputs inputs_for(const OJ& c) {
  ChatInputs in;
  in.messages = c["messages"];
  if (c.contains("tools")) in.tools = c["tools"];
  in.add_generation_prompt = c.value("add_generation_prompt", false);
  if (c.contains("kwargs")) in.kwargs = c["kwargs"];
  return in;
}

TEST(AssistantMask, GenerationBlocksAndPrefixRenderingAgree) {
  ChatTemplate tmpl = fixture("chatml_generation.jinja");
  int compared = 0;
  for (const OJ& c : golden_cases()) {
    if (c.value("continue_final_message", false) || c["messages"].empty()) continue;
    ChatInputs in = inputs_for(c);
    AssistantMask a = mask_from_generation_blocks(tmpl, in);
    AssistantMask b = mask_from_prefix_rendering(tmpl, in);
    EXPECT_EQ(a.text, b.text) << c["id"];
    EXPECT_EQ(a.spans, b.spans) << c["id"];
    ++compared;
  }
  EXPECT_GE(compared, 40);
}

TEST(AssistantMask, PrefixSpansCoverContentAndEndOfTurn) {
  ChatTemplate tmpl = fixture("chatml.jinja");
  ChatInputs in;
  in.messages = OJ::parse(R"([{"role":"system","content":"sys"},{"role":"user","content":"hi"},
      {"role":"assistant","content":"héllo"},{"role":"user","content":"again"},
      {"role":"assistant","content":"bye"}])");
  AssistantMask m = assistant_mask(tmpl, in);
  EXPECT_EQ(m.method, MaskMethod::kPrefixRendering);
  ASSERT_EQ(m.spans.size(), 2u);
  EXPECT_EQ(m.text.substr(m.spans[0].begin, m.spans[0].end - m.spans[0].begin),
            "héllo<|im_end|>\n");
  EXPECT_EQ(m.text.substr(m.spans[1].begin, m.spans[1].end - m.spans[1].begin), "bye<|im_end|>\n");
}

TEST(AssistantMask, NotPrefixPreservingNamesTheTurn) {
  ChatTemplate tmpl = fixture("phi3.jinja");  // appends eos only at the very end
  ChatInputs in;
  in.messages =
      OJ::parse(R"([{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}])");
  try {
    mask_from_prefix_rendering(tmpl, in);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("message 0 (role 'user')"), std::string::npos) << what;
    EXPECT_NE(what.find("--chat_template_path"), std::string::npos) << what;
  }
}

TEST(AssistantMask, QwenThreeMultiTurnIsNotPrefixPreserving) {
  const auto qwen_dir = test::require_shared_asset("tokenizers/qwen3");
  if (!qwen_dir) return;
  ChatTemplate tmpl = ChatTemplate::from_tokenizer(*qwen_dir);
  ChatInputs in;
  in.messages = OJ::parse(R"([{"role":"user","content":"a"},{"role":"assistant","content":"b"},
      {"role":"user","content":"c"},{"role":"assistant","content":"d"}])");
  // The first answer loses its empty <think> block once a later user turn follows.
  try {
    mask_from_prefix_rendering(tmpl, in);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("message 2 (role 'user')"), std::string::npos) << e.what();
  }
  in.messages = OJ::parse(R"([{"role":"user","content":"a"},{"role":"assistant","content":"b"}])");
  AssistantMask m = mask_from_prefix_rendering(tmpl, in);
  ASSERT_EQ(m.spans.size(), 1u);
  EXPECT_EQ(m.text.substr(m.spans[0].begin), "<think>\n\n</think>\n\nb<|im_end|>\n");
}

TEST(AssistantMask, GenerationMethodNeedsBlocks) {
  ChatInputs in;
  in.messages = OJ::parse(R"([{"role":"user","content":"hi"}])");
  EXPECT_THROW(mask_from_generation_blocks(fixture("chatml.jinja"), in), Error);
  in.continue_final_message = true;
  EXPECT_THROW(mask_from_prefix_rendering(fixture("chatml.jinja"), in), Error);
}

TEST(AssistantMask, TokenMaskFromSpans) {
  std::vector<CharSpan> spans = {{5, 10}, {20, 22}};
  std::vector<std::pair<size_t, size_t>> offsets = {{0, 5},   {4, 6},   {6, 10},
                                                    {10, 20}, {19, 21}, {22, 30}};
  EXPECT_EQ(token_mask_from_spans(spans, offsets), (std::vector<uint8_t>{0, 1, 1, 0, 1, 0}));
}

}  // namespace
}  // namespace sft::chat
