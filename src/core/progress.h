// Progress of a long loop on stderr: rows done, rows/s, tokens/s and the ETA.
//
// On a terminal (isatty(stderr)) a bar redrawn in place at most ~10 times a second, fitted to
// the terminal's width (a wrapped line cannot be redrawn in place); when
// stderr is a file or pipe (CI logs, `2> log`), one plain line every few seconds and a final
// line, so logs stay readable. The formatting is split from the clock (format_progress) so
// it can be tested without timing. Progress::add is thread-safe (workers may report).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace sft {

struct ProgressSnapshot {
  uint64_t done = 0;   // rows
  uint64_t total = 0;  // 0 = unknown (no percentage, no ETA)
  uint64_t tokens = 0;
  double seconds = 0;  // elapsed
};

// "12.3k" / "4.56M" / "999" — three significant digits for rates and counts.
std::string format_si(double value);
// "0:07", "12:03", "1:02:03".
std::string format_duration(double seconds);

// One progress line. bar_width > 0: "label [#####.....]  50% 5.00k/10.0k rows, 1.20k rows/s,
// 1.50M tok/s, ETA 0:04"; bar_width == 0: the same without the bar (plain log lines).
std::string format_progress(const std::string& label, const ProgressSnapshot& s, int bar_width);
// The terminal's line: at most `limit` characters (core/progress_width.h), the bar narrowed or
// dropped first, then the tail cut.
std::string format_progress_fitted(const std::string& label, const ProgressSnapshot& s, int limit);

class Progress {
 public:
  // enabled = false: silent. The mode (bar or lines) follows isatty(stderr).
  Progress(std::string label, uint64_t total, bool enabled);
  ~Progress();  // finish() if not done yet
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void set_total(uint64_t total) { total_ = total; }
  void add(uint64_t rows, uint64_t tokens);
  // Prints the final line (a newline after the bar on a terminal).
  void finish();

 private:
  void draw(bool final);
  ProgressSnapshot snapshot() const;

  std::string label_;
  std::atomic<uint64_t> total_;
  std::atomic<uint64_t> done_{0}, tokens_{0};
  bool enabled_, tty_, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
  uint64_t last_done_ = 0;
  std::mutex mutex_;
};

}  // namespace sft
