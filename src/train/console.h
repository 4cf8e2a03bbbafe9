// The training console: log events as one line each, and a progress bar that is there before
// step 1 and moves with every micro-batch (so a step of 16 accumulated micro-batches is not
// a minute of stillness).
//
// The metric lines (one per log event, and the final train_runtime summary) go to stdout, as
// TRL prints its metric dicts there; the bar and every other line go to stderr. So
// `sft train ... > train.log` keeps the metrics and the terminal still shows the progress.
//
// On a terminal the bar "[####......] step 3/100, micro 4/16, 0:45<12:00, loss 11.9312" is
// redrawn in place (at most ~20 times a second, always at a step's end), fitted to the
// terminal's width (core/progress_width.h), and erased before any other line. On a file or pipe: no
// bar and no control characters, a plain progress line every 30 s instead ("step 3/100, micro 4/16,
// 0:45 elapsed, ETA 12:00, loss 11.9312"), so a CI log shows a long step is alive. Losses and other
// metrics print with 6 significant digits (11.9312): 4 digits hid a loss moving in the fifth. The
// formatting is split from the clock so it is tested without timing.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "io/json.h"

namespace sft {

// A metric for the console: integers as integers, otherwise 6 significant digits
// ("11.9312", "2e-05", "0.000123457").
std::string format_metric(double value);

// "step 10 | loss 11.9312 | grad_norm 3.14159 | ..." — a log event as one console line.
std::string format_log_line(const Json& entry);

struct TrainBarState {
  int64_t step = 0;                        // optimizer steps done
  int64_t max_steps = 0;                   // of the whole run
  int64_t micro = 0;                       // micro-batches done in the step in progress
  int64_t gas = 1;                         // micro-batches in that step
  double elapsed_s = 0;                    // since this session's training began
  int64_t micro_batches_this_session = 0;  // run so far, for the rate behind the ETA
  std::optional<double> loss;              // the last step's
};

// bar_width > 0: "[###.......] step 3/10, micro 2/4, 0:12<0:30, loss 11.9312";
// bar_width == 0: "step 3/10, micro 2/4, 0:12 elapsed, ETA 0:30, loss 11.9312". The ETA is
// the remaining micro-batches at this session's rate ("?" before the first one).
std::string format_train_bar(const TrainBarState& s, int bar_width);
// The terminal's bar: at most `limit` characters, the bar narrowed or dropped first, then the
// tail cut.
std::string format_train_bar_fitted(const TrainBarState& s, int limit);

class Console {
 public:
  // bar = false: log lines only. tty: nullopt follows isatty(out); out is stderr and metrics
  // stdout but in tests.
  explicit Console(bool bar, std::FILE* out = stderr, std::optional<bool> tty = std::nullopt,
                   std::FILE* metrics = stdout);
  ~Console();  // erases a drawn bar
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // A line of its own (the bar, if drawn, is erased first and redrawn on the next update).
  void line(const std::string& text);
  // A metric line, on `metrics` (the bar on `out` is erased first, as for line).
  void metrics_line(const std::string& text);
  // The bar's new state; `force` draws even right after the previous redraw (a step's end).
  void update(const TrainBarState& state, bool force);
  // Erases the bar (before output the console does not write, e.g. the export's lines).
  void clear();

 private:
  bool bar_, tty_;
  std::FILE* out_;
  std::FILE* metrics_;
  bool shown_ = false;
  double last_draw_ = -1e300;
};

}  // namespace sft
