#include "core/utf8.h"

#include <gtest/gtest.h>

namespace sft {

TEST(Utf8, AcceptsValidText) {
  EXPECT_FALSE(find_invalid_utf8("").has_value());
  EXPECT_FALSE(find_invalid_utf8("plain ascii").has_value());
  EXPECT_FALSE(find_invalid_utf8("Grüße, 世界, 🙂, \xF4\x8F\xBF\xBF").has_value());
}

TEST(Utf8, FindsTheFirstBadByte) {
  EXPECT_EQ(find_invalid_utf8("ab\xFF"), 2u);
  EXPECT_EQ(find_invalid_utf8("\xC0\xAF"), 0u);          // overlong '/'
  EXPECT_EQ(find_invalid_utf8("x\xE0\x80\xAF"), 1u);     // overlong 3-byte
  EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u);      // surrogate
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("ok\xE4\xB8"), 2u);        // truncated
  EXPECT_EQ(find_invalid_utf8("\xE4\x41\x96"), 0u);      // bad continuation
}

}  // namespace sft
