// Parity with transformers' apply_chat_template: every template × conversation in
// tests/fixtures/chat_templates/goldens.json (tools/make_chat_template_goldens.py) must
// render byte-identically, or raise where Python raised (same exception class; same text
// for raise_exception). Templates from ../shared fail when it is absent (skip with
// SFT_ALLOW_MISSING_ASSETS=1, tests/test_paths.h); the committed family templates always run.
#include <gtest/gtest.h>

#include <cstdio>

#include "chat/chat_template.h"
#include "io/mapped_file.h"
#include "test_paths.h"

namespace sft::chat {
namespace {

using OJ = jinja::OrderedJson;

const OJ& goldens() {
  static const OJ g = parse_ordered_json(
      read_text_file(test::source_path("tests/fixtures/chat_templates/goldens.json"), "test"),
      "goldens.json");
  return g;
}

ChatInputs inputs_for(const OJ& c) {
  ChatInputs in;
  in.messages = c["messages"];
  if (c.contains("tools")) in.tools = c["tools"];
  in.add_generation_prompt = c.value("add_generation_prompt", false);
  in.continue_final_message = c.value("continue_final_message", false);
  if (c.contains("kwargs")) in.kwargs = c["kwargs"];
  return in;
}

// Python character offsets → byte offsets in the UTF-8 text.
size_t byte_offset(const std::string& text, size_t chars) {
  size_t i = 0, n = 0;
  while (i < text.size() && n < chars) {
    ++i;
    while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
    ++n;
  }
  return i;
}

std::optional<ChatTemplate> load(const OJ& t) {
  if (t.contains("shared")) {
    const auto dir = test::require_shared_asset("tokenizers/" + t["shared"].get<std::string>());
    if (!dir) return std::nullopt;  // the test has failed (or been skipped) already
    return ChatTemplate::from_tokenizer(*dir);
  }
  SpecialTokens tokens;
  const OJ& st = t["special_tokens"];
  if (st.contains("bos_token")) tokens.bos = st["bos_token"].get<std::string>();
  if (st.contains("eos_token")) tokens.eos = st["eos_token"].get<std::string>();
  if (st.contains("pad_token")) tokens.pad = st["pad_token"].get<std::string>();
  if (st.contains("unk_token")) tokens.unk = st["unk_token"].get<std::string>();
  return ChatTemplate::from_file(
      test::source_path("tests/fixtures/chat_templates/" + t["fixture"].get<std::string>()),
      tokens);
}

void check_template(const OJ& t, int* identical, int* total) {
  std::optional<ChatTemplate> tmpl = load(t);
  if (!tmpl) return;
  std::map<std::string, const OJ*> cases;
  for (const OJ& c : goldens()["cases"]) cases[c["id"].get<std::string>()] = &c;
  for (const OJ& r : t["results"]) {
    const std::string id = r["id"].get<std::string>();
    ChatInputs in = inputs_for(*cases.at(id));
    ++*total;
    std::string got;
    std::vector<jinja::ByteSpan> spans;
    try {
      got = tmpl->apply(in, &spans);
    } catch (const jinja::TemplateError& e) {
      if (!r.contains("error")) {
        ADD_FAILURE() << t["name"] << " / " << id << ": raised " << e.what();
        continue;
      }
      std::string want_class = r["error"]["class"].get<std::string>();
      EXPECT_EQ(want_class, jinja::error_class_name(e.error_class()))
          << t["name"] << " / " << id << ": " << e.what();
      if (want_class == "TemplateError") {
        EXPECT_EQ(r["error"]["message"].get<std::string>(), e.bare_message())
            << t["name"] << " / " << id;
      }
      if (want_class == jinja::error_class_name(e.error_class())) ++*identical;
      continue;
    }
    if (r.contains("error")) {
      ADD_FAILURE() << t["name"] << " / " << id << ": Python raised "
                    << r["error"]["class"].get<std::string>() << " ("
                    << r["error"]["message"].get<std::string>() << ") but we rendered:\n"
                    << got;
      continue;
    }
    const std::string want = r["text"].get<std::string>();
    EXPECT_EQ(want, got) << t["name"] << " / " << id;
    if (want == got) ++*identical;
    if (r.contains("generation_spans")) {
      std::vector<std::pair<size_t, size_t>> want_spans, got_spans;
      for (const OJ& s : r["generation_spans"]) {
        want_spans.emplace_back(byte_offset(want, s[0].get<size_t>()),
                                byte_offset(want, s[1].get<size_t>()));
      }
      for (const auto& s : spans) got_spans.emplace_back(s.begin, s.end);
      EXPECT_EQ(want_spans, got_spans) << t["name"] << " / " << id;
    }
  }
}

class ChatTemplateGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateGolden, MatchesTransformers) {
  for (const OJ& t : goldens()["templates"]) {
    if (t["name"] != GetParam()) continue;
    int identical = 0, total = 0;
    check_template(t, &identical, &total);
    std::printf("[parity] %s: %d/%d identical\n", GetParam().c_str(), identical, total);
    return;
  }
  FAIL() << "no golden template named " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Templates, ChatTemplateGolden,
                         ::testing::Values("qwen3", "llama3_1", "gemma3", "deepseek_v3", "chatml",
                                           "chatml_generation", "llama2", "mistral", "phi3",
                                           "zephyr"));

TEST(ChatTemplateGoldens, CoverEnoughConversations) {
  EXPECT_GE(goldens()["cases"].size(), 40u);
  EXPECT_GE(goldens()["templates"].size(), 10u);
}

}  // namespace
}  // namespace sft::chat
