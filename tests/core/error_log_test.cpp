#include <gtest/gtest.h>

#include "core/error.h"
#include "core/log.h"

namespace sft {

TEST(Error, MessagesStartWithTheComponent) {
  Error e("safetensors", "bad header");
  EXPECT_STREQ(e.what(), "[safetensors] bad header");
  EXPECT_EQ(e.component(), "safetensors");
}

TEST(Error, FileProblemsNameFilePlaceAndHint) {
  try {
    fail_in_file("config", {"m/config.json", "key 'hidden_size'"}, "expected an integer", "fix it");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "[config] m/config.json: key 'hidden_size': expected an integer (hint: fix it)");
  }
  EXPECT_EQ(describe_file_problem({"f", ""}, "empty", ""), "f: empty");
}

TEST(Log, LevelsParseAndFilter) {
  EXPECT_EQ(parse_log_level("debug"), LogLevel::kDebug);
  EXPECT_EQ(parse_log_level("warning"), LogLevel::kWarn);
  EXPECT_THROW(parse_log_level("loud"), Error);
  LogLevel saved = log_level();
  set_log_level(LogLevel::kError);
  testing::internal::CaptureStderr();
  log_info("hidden ", 1);
  log_error("shown ", 2);
  std::string out = testing::internal::GetCapturedStderr();
  set_log_level(saved);
  EXPECT_EQ(out, "[sft error] shown 2\n");
}

TEST(Log, UnderMpirunRankZeroSpeaksAndOtherRanksOnlyTheirOwnErrors) {
  LogLevel saved = log_level();
  set_log_level(LogLevel::kInfo);
  set_log_rank(1, 2);
  testing::internal::CaptureStderr();
  log_info("loaded");
  log_warn("ignoring x");
  log_error("my collective timed out");
  const std::string other = testing::internal::GetCapturedStderr();
  EXPECT_EQ(log_rank_prefix(), "rank 1 of 2: ");
  set_log_rank(0, 2);
  testing::internal::CaptureStderr();
  log_info("loaded");
  const std::string first = testing::internal::GetCapturedStderr();
  EXPECT_EQ(log_rank_prefix(), "");
  set_log_rank(0, 1);
  set_log_level(saved);
  EXPECT_EQ(other, "[sft error] rank 1 of 2: my collective timed out\n");
  EXPECT_EQ(first, "[sft info] loaded\n");
}

}  // namespace sft
