// html_escape: markupsafe's five characters and entities, everything else (UTF-8 too) as is.
#include "core/html_escape.h"

#include <gtest/gtest.h>

namespace sft {
namespace {

TEST(HtmlEscape, EscapesMarkupsafesFiveCharacters) {
  EXPECT_EQ(html_escape(R"(<a href="x">Tom & Jerry's</a>)"),
            "&lt;a href=&#34;x&#34;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
}

TEST(HtmlEscape, CopiesEverythingElse) {
  EXPECT_EQ(html_escape(""), "");
  EXPECT_EQ(html_escape("plain text; 1 + 2 = 3 %#@!"), "plain text; 1 + 2 = 3 %#@!");
  EXPECT_EQ(html_escape("caf\xc3\xa9 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xf0\x9f\x98\x80");
  EXPECT_EQ(html_escape(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(HtmlEscape, EscapesAnAmpersandOnceNotAnEntityAgain) {
  EXPECT_EQ(html_escape("&amp;"), "&amp;amp;");
}

}  // namespace
}  // namespace sft
