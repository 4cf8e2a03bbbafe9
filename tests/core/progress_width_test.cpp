// Progress lines fit the terminal: its width from $COLUMNS where the fd is no terminal, lines
// cut at columns - 1 without splitting a UTF-8 character, and the data-preparation bar
// narrowed, then dropped, then cut in a narrow terminal.
#include "core/progress_width.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "core/progress.h"
#include "scoped_env.h"

namespace sft {
namespace {

TEST(ProgressWidth, ColumnsFromTheEnvironmentWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    test::ScopedEnv columns("COLUMNS", "37");
    EXPECT_EQ(terminal_columns(fileno(f)), 37);
  }
  {
    test::ScopedEnv columns("COLUMNS", "junk");
    EXPECT_EQ(terminal_columns(fileno(f)), 80);
  }
  {
    test::ScopedEnv columns("COLUMNS", nullptr);
    EXPECT_EQ(terminal_columns(fileno(f)), 80);
  }
  std::fclose(f);
  EXPECT_EQ(progress_line_limit(80), 79);
  EXPECT_EQ(progress_line_limit(0), 1);
}

TEST(ProgressWidth, CutsByCharactersNotBytes) {
  EXPECT_EQ(fit_to_width("abcdef", 4), "abcd");
  EXPECT_EQ(fit_to_width("abc", 4), "abc");
  EXPECT_EQ(display_width("w\xc3\xb6rld"), 5);
  EXPECT_EQ(fit_to_width("w\xc3\xb6rld", 2), "w\xc3\xb6");
  EXPECT_EQ(fit_to_width("w\xc3\xb6rld", 1), "w");
}

TEST(ProgressWidth, DataBarNarrowsThenGoesThenTheLineIsCut) {
  const ProgressSnapshot s{5000, 10000, 1500000, 4.0};
  const std::string wide = format_progress_fitted("preparing", s, 200);
  EXPECT_EQ(wide, format_progress("preparing", s, 30));
  // 10 columns too many for the 30-wide bar: a 20-wide one.
  const int full = display_width(wide);
  EXPECT_EQ(format_progress_fitted("preparing", s, full - 10), format_progress("preparing", s, 20));
  // No room for a bar of 5: none, and the tail cut.
  const std::string narrow = format_progress_fitted("preparing", s, 40);
  EXPECT_EQ(narrow, format_progress("preparing", s, 0).substr(0, 40));
  EXPECT_EQ(narrow.find('['), std::string::npos);
}

}  // namespace
}  // namespace sft
