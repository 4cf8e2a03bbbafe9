// The Jinja syntax table: ≥150 small templates whose expected output (or exception class)
// was produced by jinja2 itself in transformers' environment
// (tools/make_jinja_syntax_goldens.py → tests/fixtures/chat_templates/jinja_syntax.json).
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/jinja_template.h"
#include "io/mapped_file.h"
#include "test_paths.h"

namespace sft::jinja {
namespace {

const OrderedJson& table() {
  static const OrderedJson t = chat::parse_ordered_json(
      read_text_file(test::source_path("tests/fixtures/chat_templates/jinja_syntax.json"), "test"),
      "jinja_syntax.json");
  return t;
}

// jinja2 reports some syntax problems through subclasses or Python's own SyntaxError.
std::string normalize_class(const std::string& c) {
  if (c == "TemplateAssertionError" || c == "SyntaxError") return "TemplateSyntaxError";
  if (c == "KeyError") return "IndexError";
  return c;
}

TEST(JinjaSyntaxTable, HasEnoughCases) {
  EXPECT_GE(table()["cases"].size(), 150u);
}

TEST(JinjaSyntaxTable, MatchesJinja2) {
  ValueDict context;
  for (auto it = table()["context"].begin(); it != table()["context"].end(); ++it)
    context.set(it.key(), Value::from_json(*it));
  int identical = 0, total = 0;
  for (const OrderedJson& c : table()["cases"]) {
    ++total;
    const std::string src = c["template"].get<std::string>();
    std::string got;
    try {
      Template t(src);
      got = t.render(context);
    } catch (const TemplateError& e) {
      if (!c.contains("error")) {
        ADD_FAILURE() << "case " << c["id"] << " " << src << ": raised " << e.what();
        continue;
      }
      std::string want = normalize_class(c["error"].get<std::string>());
      EXPECT_EQ(want, error_class_name(e.error_class()))
          << "case " << c["id"] << " " << src << ": " << e.what();
      if (want == "TemplateError") {
        EXPECT_EQ(c["message"].get<std::string>(), e.bare_message());
      }
      if (want == error_class_name(e.error_class())) ++identical;
      continue;
    }
    if (c.contains("error")) {
      ADD_FAILURE() << "case " << c["id"] << " " << src << ": jinja2 raised " << c["error"] << " ("
                    << c["message"] << ") but we rendered: " << got;
      continue;
    }
    EXPECT_EQ(c["output"].get<std::string>(), got) << "case " << c["id"] << " " << src;
    if (c["output"].get<std::string>() == got) ++identical;
  }
  std::printf("[syntax table] %d/%d identical\n", identical, total);
}

}  // namespace
}  // namespace sft::jinja
