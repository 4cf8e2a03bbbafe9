// The training console: 6-significant-digit metrics, the per-micro-batch bar's text (before
// step 1, mid-step with gradient accumulation, at the end), and what a terminal and a log get.
#include "train/console.h"

#include <gtest/gtest.h>

#include "core/progress_width.h"
#include "scoped_env.h"

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

TEST(Console, MetricsHaveSixSignificantDigits) {
  EXPECT_EQ(format_metric(11.93124), "11.9312");
  EXPECT_EQ(format_metric(11.9312), "11.9312");
  EXPECT_EQ(format_metric(0.000123456789), "0.000123457");
  EXPECT_EQ(format_metric(2e-5), "2e-05");
  EXPECT_EQ(format_metric(464), "464");
  EXPECT_EQ(format_metric(-0.5), "-0.5");
  const Json entry = {{"step", 10}, {"loss", 11.93124}, {"learning_rate", 2e-5}, {"note", "x"}};
  EXPECT_EQ(format_log_line(entry), "step 10 | learning_rate 2e-05 | loss 11.9312");
}

TEST(Console, BarBeforeTheFirstStep) {
  TrainBarState s;
  s.max_steps = 100;
  s.gas = 16;
  EXPECT_EQ(format_train_bar(s, 10), "[..........] step 1/100, micro 0/16, 0:00<?");
  EXPECT_EQ(format_train_bar(s, 0), "step 1/100, micro 0/16, 0:00 elapsed, ETA ?");
}

TEST(Console, BarMovesPerMicroBatch) {
  TrainBarState s;
  s.max_steps = 10;
  s.gas = 4;
  s.step = 2;  // 2 steps done, 3 of the third's 4 micro-batches done: 11 of 40
  s.micro = 3;
  s.micro_batches_this_session = 11;
  s.elapsed_s = 22;  // 2 s a micro-batch, 29 left
  s.loss = 11.93124;
  EXPECT_EQ(format_train_bar(s, 40),
            "[###########.............................] step 3/10, micro 3/4, 0:22<0:58, loss "
            "11.9312");
  EXPECT_EQ(format_train_bar(s, 0), "step 3/10, micro 3/4, 0:22 elapsed, ETA 0:58, loss 11.9312");
  // A resumed session's rate counts only its own micro-batches.
  s.micro_batches_this_session = 3;
  s.elapsed_s = 3;
  EXPECT_EQ(format_train_bar(s, 0), "step 3/10, micro 3/4, 0:03 elapsed, ETA 0:29, loss 11.9312");
}

TEST(Console, BarAtTheEndAndWithoutAccumulation) {
  TrainBarState s;
  s.max_steps = 4;
  s.gas = 1;
  s.step = 4;
  s.micro_batches_this_session = 4;
  s.elapsed_s = 8;
  s.loss = 7.03366;
  EXPECT_EQ(format_train_bar(s, 4), "[####] step 4/4, 0:08<0:00, loss 7.03366");
}

TEST(Console, TerminalGetsARedrawnBarErasedBeforeLines) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Console console(true, f, true);
    TrainBarState s;
    s.max_steps = 2;
    console.update(s, true);
    console.line("training: 2 steps");
    EXPECT_EQ(contents(f),
              "\r[....................] step 1/2, 0:00<?\x1b[K\r\x1b[Ktraining: 2 steps\n");
    console.update(s, true);
  }  // the destructor erases the bar it left
  const std::string text = contents(f);
  EXPECT_EQ(text.substr(text.size() - 4), "\r\x1b[K");
  std::fclose(f);
}

TEST(Console, LogGetsPlainLinesOnly) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Console console(true, f, false);
    TrainBarState s;
    s.max_steps = 2;
    console.update(s, true);  // a log's first progress line waits 30 s, whatever `force`
    console.line("step 1 | loss 7.04802");
  }
  EXPECT_EQ(contents(f), "step 1 | loss 7.04802\n");
  std::fclose(f);
}

TEST(Console, NoBarWhenDisabled) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Console console(false, f, true);
    console.update(TrainBarState{}, true);
    console.line("x");
  }
  EXPECT_EQ(contents(f), "x\n");
  std::fclose(f);
}

TEST(Console, MetricLinesGoToStdoutTheBarStaysOnStderr) {
  std::FILE* err = std::tmpfile();
  std::FILE* out = std::tmpfile();
  ASSERT_TRUE(err && out);
  {
    Console console(true, err, true, out);
    TrainBarState s;
    s.max_steps = 2;
    console.update(s, true);
    console.metrics_line("step 1 | loss 7.04802");
    console.line("saving checkpoint-1");
  }
  EXPECT_EQ(contents(out), "step 1 | loss 7.04802\n");
  EXPECT_EQ(contents(err),
            "\r[....................] step 1/2, 0:00<?\x1b[K\r\x1b[Ksaving checkpoint-1\n");
  std::fclose(err);
  std::fclose(out);
}

TEST(Console, BarFitsTheTerminalWidth) {
  TrainBarState s;
  s.max_steps = 1000;
  s.gas = 16;
  s.step = 12;
  s.micro = 3;
  s.micro_batches_this_session = 195;
  s.elapsed_s = 390;
  s.loss = 11.93124;
  const std::string full = format_train_bar(s, 20);
  EXPECT_EQ(format_train_bar_fitted(s, 200), full);
  // Five columns short: the bar narrows by five.
  EXPECT_EQ(format_train_bar_fitted(s, display_width(full) - 5), format_train_bar(s, 15));
  // Too narrow for a bar: none, and the text cut at the limit.
  const std::string narrow = format_train_bar_fitted(s, 30);
  EXPECT_EQ(narrow, "step 13/1000, micro 3/16, 6:30");
  EXPECT_EQ(format_train_bar_fitted(s, 12), "step 13/1000");

  // What a 40-column terminal gets: no segment between carriage returns wider than 39.
  test::ScopedEnv columns("COLUMNS", "40");  // a tmpfile is no terminal: $COLUMNS is read
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    Console console(true, f, true);
    console.update(s, true);
  }
  const std::string text = contents(f);
  std::fclose(f);
  ASSERT_EQ(text.rfind("\r", 0), 0u) << text;
  const size_t end = text.find("\x1b[K");
  ASSERT_NE(end, std::string::npos);
  const std::string drawn = text.substr(1, end - 1);
  EXPECT_LE(display_width(drawn), 39) << drawn;
  EXPECT_EQ(drawn, format_train_bar_fitted(s, 39));
}

}  // namespace
}  // namespace sft
