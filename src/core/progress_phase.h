// A named phase of a command ("loading weights", "preparing data"), shown while it runs so a
// long start is never silent.
//
// On a terminal: a spinner line "| loading weights 0:03" redrawn in place by a background
// thread every 100 ms, replaced by "loading weights: 3.2 s" when the phase ends. On a file or
// pipe: plain lines only, no control characters ("loading weights ...", a "still ..." line
// every 30 s, then "loading weights: 3.2 s"). The phase owns the terminal's last line only
// while nothing else wants it: while a Progress bar is alive the spinner does not draw (the
// bar is the better news), and log_line and the training console clear it first
// (clear_status_line), so their lines never end up glued to a spinner.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace sft {

// The spinner line of a running phase: "| loading weights 0:03" (frame picks | / - \).
std::string format_phase_spinner(const std::string& name, double seconds, int frame);
// The line a phase ends with: "loading weights: 3.2 s" ("0.05 s" under a second).
std::string format_phase_done(const std::string& name, double seconds);

// Erases a spinner drawn on the terminal (if any), so the caller's line starts at column 0;
// the spinner redraws below it on its next tick. Cheap and safe from any thread.
void clear_status_line();

// While a terminal progress bar is alive, spinners do not draw (Progress calls these).
void status_line_bar_begin();
void status_line_bar_end();

class Phase {
 public:
  // enabled = false: silent. tty: a spinner (true) or plain lines (false); nullopt follows
  // isatty of `out`. `out` is stderr except in tests.
  Phase(std::string name, bool enabled, std::FILE* out = stderr,
        std::optional<bool> tty = std::nullopt);
  ~Phase();  // done() if not done yet; while an exception unwinds only erases the spinner
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;

  // Ends the phase: stops the spinner and prints the done line. Returns the seconds it took.
  double done();

 private:
  void stop(bool print_done);    // ends the thread, then the done line if asked
  void run();                    // the background thread's loop
  void draw_spinner(int frame);  // under mutex_

  std::string name_;
  bool enabled_, tty_, finished_ = false;
  std::FILE* out_;
  double start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sft
