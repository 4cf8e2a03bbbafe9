// Progress bar / periodic lines on stderr (see progress.h).
#include "core/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/progress_phase.h"
#include "core/progress_width.h"

namespace sft {

namespace {

// Redraw intervals: a terminal bar looks live at ~10 Hz; a log gets a line every 5 s.
constexpr double kTtyInterval = 0.1;
constexpr double kLineInterval = 5.0;
constexpr int kTtyBarWidth = 30;
constexpr int kMinBarWidth = 5;  // narrower than this, a bar says nothing: dropped

std::string fixed3(double v) {
  char buf[32];
  int decimals = v < 10 ? 2 : v < 100 ? 1 : 0;
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::string format_si(double value) {
  if (!std::isfinite(value) || value < 0) return "?";
  if (value < 1000)
    return value == std::floor(value) ? std::to_string(int64_t(value)) : fixed3(value);
  const char* units = "kMGTP";
  for (int i = 0; i < 5; ++i) {
    value /= 1000;
    // Round first so 999.96k prints as 1.00M, not 1000k.
    if (value < 999.5 || i == 4) return fixed3(value) + units[i];
  }
  return "?";
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<int64_t>(std::llround(seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(s / 3600),
                  (long long)(s / 60 % 60), (long long)(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", (long long)(s / 60), (long long)(s % 60));
  return buf;
}

std::string format_progress(const std::string& label, const ProgressSnapshot& s, int bar_width) {
  // Appends, not `" " + std::string`: GCC 12 warns falsely (-Wrestrict) on the latter.
  std::string out = label;
  const bool known = s.total > 0;
  const double fraction = known ? std::min(1.0, double(s.done) / double(s.total)) : 0.0;
  if (bar_width > 0 && known) {
    const int filled = static_cast<int>(fraction * bar_width);
    out.append(" [").append(filled, '#').append(bar_width - filled, '.').append("]");
  }
  if (known) {
    char pct[8];
    std::snprintf(pct, sizeof pct, " %3d%%", static_cast<int>(fraction * 100));
    out.append(pct).append(" ").append(format_si(double(s.done)));
    out.append("/").append(format_si(double(s.total))).append(" rows");
  } else {
    out.append(" ").append(format_si(double(s.done))).append(" rows");
  }
  if (s.seconds > 0) {
    out.append(", ").append(format_si(s.done / s.seconds)).append(" rows/s");
    out.append(", ").append(format_si(s.tokens / s.seconds)).append(" tok/s");
    if (known && s.done > 0 && s.done < s.total)
      out.append(", ETA ").append(
          format_duration(s.seconds * double(s.total - s.done) / double(s.done)));
    else
      out.append(", ").append(format_duration(s.seconds));
  }
  return out;
}

std::string format_progress_fitted(const std::string& label, const ProgressSnapshot& s, int limit) {
  // The bar gives way first (it repeats the percentage), then the line's tail is cut.
  return fit_bar_line([&](int width) { return format_progress(label, s, width); }, kTtyBarWidth,
                      kMinBarWidth, limit);
}

Progress::Progress(std::string label, uint64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled),
      tty_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (enabled_ && tty_) status_line_bar_begin();  // a phase spinner gives way to the bar
}

Progress::~Progress() {
  if (!finished_) finish();
}

ProgressSnapshot Progress::snapshot() const {
  ProgressSnapshot s;
  s.done = done_.load();
  s.total = total_.load();
  s.tokens = tokens_.load();
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return s;
}

void Progress::add(uint64_t rows, uint64_t tokens) {
  done_ += rows;
  tokens_ += tokens;
  if (enabled_) draw(false);
}

void Progress::finish() {
  if (finished_) return;
  if (enabled_) draw(true);
  if (enabled_ && tty_) status_line_bar_end();
  finished_ = true;
}

void Progress::draw(bool final) {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread is drawing; skip this update
  auto now = std::chrono::steady_clock::now();
  double since = std::chrono::duration<double>(now - last_draw_).count();
  if (!final && since < (tty_ ? kTtyInterval : kLineInterval)) return;
  const ProgressSnapshot s = snapshot();
  // A log already holding this exact count needs no second, final copy of it.
  if (final && !tty_ && s.done == last_done_ && s.done > 0) return;
  last_draw_ = now;
  last_done_ = s.done;
  std::string line;
  if (tty_) {
    // Carriage return + clear to end of line, so a shorter line leaves no tail; the line fits
    // the terminal, since a wrapped one could not be redrawn in place.
    line.append("\r")
        .append(
            format_progress_fitted(label_, s, progress_line_limit(terminal_columns(STDERR_FILENO))))
        .append("\x1b[K")
        .append(final ? "\n" : "");
  } else {
    line = format_progress(label_, s, 0).append("\n");
  }
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace sft
