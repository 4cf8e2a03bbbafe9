// Phase lines: the formats, plain lines without control characters on a non-terminal, and a
// spinner that is erased before the done line on a terminal (both written to a temp file).
#include "core/progress_phase.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "core/clock.h"

namespace sft {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[256];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  std::fseek(f, 0, SEEK_END);
  return out;
}

TEST(ProgressPhase, Formats) {
  EXPECT_EQ(format_phase_spinner("loading weights", 3.2, 0), "| loading weights 0:03");
  EXPECT_EQ(format_phase_spinner("loading weights", 65, 1), "/ loading weights 1:05");
  EXPECT_EQ(format_phase_spinner("x", 0, 3), "\\ x 0:00");
  EXPECT_EQ(format_phase_done("loading weights", 3.24), "loading weights: 3.2 s");
  EXPECT_EQ(format_phase_done("preparing data", 0.054), "preparing data: 0.05 s");
  EXPECT_EQ(format_phase_done("initialising", 42.4), "initialising: 42 s");
}

TEST(ProgressPhase, PlainLinesOnANonTerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Phase phase("loading weights", true, f, false);
    EXPECT_EQ(contents(f), "loading weights ...\n");  // from the first moment
    phase.done();
  }
  const std::string text = contents(f);
  EXPECT_EQ(text.rfind("loading weights ...\nloading weights: ", 0), 0u) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find_first_of("\r\x1b"), std::string::npos) << text;
  std::fclose(f);
}

TEST(ProgressPhase, SpinnerOnATerminalIsErasedBeforeTheDoneLine) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Phase phase("preparing data", true, f, true);
  // The spinner draws at once (or after a recent clear's short hold); wait for it, bounded.
  const double deadline = now_s() + 10;
  while (contents(f).empty() && now_s() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::string drawn = contents(f);  // "\r| preparing data 0:00\x1b[K", any frame
  EXPECT_EQ(drawn.rfind("\r", 0), 0u) << drawn;
  EXPECT_EQ(drawn.find(" preparing data 0:0"), 2u) << drawn;
  EXPECT_NE(drawn.find("\x1b[K"), std::string::npos) << drawn;
  phase.done();
  const std::string text = contents(f);
  const std::string tail = "\r\x1b[Kpreparing data: ";
  ASSERT_NE(text.rfind(tail), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.rfind(tail) + tail.size()).find_first_of("\r\x1b"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
  std::fclose(f);
}

TEST(ProgressPhase, AnErrorClaimsNoDoneLine) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  try {
    Phase phase("loading weights", true, f, false);
    throw std::runtime_error("no such model");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(contents(f), "loading weights ...\n");
  std::fclose(f);
}

TEST(ProgressPhase, DisabledIsSilent) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Phase("quiet", false, f, false).done();
  Phase("quiet", false, f, true).done();
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

}  // namespace
}  // namespace sft
