// Phase spinners and plain phase lines (see progress_phase.h).
#include "core/progress_phase.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>

#include "core/clock.h"
#include "core/progress.h"
#include "core/progress_width.h"

namespace sft {

namespace {

constexpr double kSpinnerInterval = 0.1;  // a terminal spinner looks alive at 10 Hz
constexpr double kStillInterval = 30.0;   // a log gets a "still ..." line this often
// After clear_status_line the spinner waits this long before drawing again, so the line the
// caller writes right after the clear lands at column 0 rather than after a fresh spinner.
constexpr double kHoldAfterClear = 0.25;

// The terminal's last line, shared by every phase and clear_status_line.
struct StatusLine {
  std::mutex mutex;
  std::FILE* drawn_on = nullptr;  // where a spinner is drawn now, if anywhere
  double hold_until = 0;
  std::atomic<int> bars{0};
};

StatusLine& status_line() {
  static StatusLine line;
  return line;
}

}  // namespace

std::string format_phase_spinner(const std::string& name, double seconds, int frame) {
  static const char kFrames[] = {'|', '/', '-', '\\'};
  std::string out(1, kFrames[frame & 3]);
  return out.append(" ").append(name).append(" ").append(format_duration(seconds));
}

std::string format_phase_done(const std::string& name, double seconds) {
  char buf[32];
  const double s = seconds < 0 ? 0 : seconds;
  std::snprintf(buf, sizeof buf, "%.*f s", s < 1 ? 2 : s < 10 ? 1 : 0, s);
  return name + ": " + buf;
}

void clear_status_line() {
  StatusLine& line = status_line();
  std::lock_guard lock(line.mutex);
  line.hold_until = now_s() + kHoldAfterClear;
  if (line.drawn_on == nullptr) return;
  std::fputs("\r\x1b[K", line.drawn_on);
  std::fflush(line.drawn_on);
  line.drawn_on = nullptr;
}

void status_line_bar_begin() {
  clear_status_line();
  ++status_line().bars;
}

void status_line_bar_end() {
  --status_line().bars;
}

Phase::Phase(std::string name, bool enabled, std::FILE* out, std::optional<bool> tty)
    : name_(std::move(name)),
      enabled_(enabled),
      tty_(tty.value_or(isatty(fileno(out)) == 1)),
      out_(out),
      start_(now_s()) {
  if (!enabled_) return;
  if (!tty_) {
    clear_status_line();
    std::fprintf(out_, "%s ...\n", name_.c_str());
    std::fflush(out_);
  }
  thread_ = std::thread([this] { run(); });
}

Phase::~Phase() {
  if (finished_) return;
  // Unwinding from an error: stop and erase the spinner, but claim no "done" line; the error
  // message comes next.
  if (std::uncaught_exceptions() > 0) {
    stop(false);
  } else {
    done();
  }
}

void Phase::draw_spinner(int frame) {
  StatusLine& line = status_line();
  std::lock_guard lock(line.mutex);
  if (line.bars > 0 || now_s() < line.hold_until) return;
  // Appends, not `"\r" + std::string`: GCC 12 warns falsely (-Wrestrict) on the latter.
  const int limit = progress_line_limit(terminal_columns(fileno(out_)));
  std::string text = "\r";
  text.append(fit_to_width(format_phase_spinner(name_, now_s() - start_, frame), limit))
      .append("\x1b[K");
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
  line.drawn_on = out_;
}

void Phase::run() {
  std::unique_lock lock(mutex_);
  const double interval = tty_ ? kSpinnerInterval : kStillInterval;
  for (int frame = 0; !stop_; ++frame) {
    if (tty_) {
      draw_spinner(frame);
    } else if (frame > 0) {
      clear_status_line();
      std::fprintf(out_, "still %s (%s)\n", name_.c_str(),
                   format_duration(now_s() - start_).c_str());
      std::fflush(out_);
    }
    wake_.wait_for(lock, std::chrono::duration<double>(interval), [this] { return stop_; });
  }
}

double Phase::done() {
  const double seconds = now_s() - start_;
  if (!finished_) stop(true);
  return seconds;
}

void Phase::stop(bool print_done) {
  const double seconds = now_s() - start_;
  finished_ = true;
  if (!enabled_) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  clear_status_line();
  if (!print_done) return;
  std::fprintf(out_, "%s\n", format_phase_done(name_, seconds).c_str());
  std::fflush(out_);
}

}  // namespace sft
