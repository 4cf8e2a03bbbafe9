// The training console: log lines and the per-micro-batch bar (see console.h).
#include "train/console.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/clock.h"
#include "core/progress.h"
#include "core/progress_phase.h"
#include "core/progress_width.h"

namespace sft {

namespace {

constexpr int kBarWidth = 20;           // leaves room for the text in 80 columns
constexpr int kMinBarWidth = 5;         // a narrower bar says nothing: dropped
constexpr double kTtyInterval = 0.05;   // redraws within a step, at most 20 a second
constexpr double kLineInterval = 30.0;  // a plain progress line in logs this often

}  // namespace

std::string format_metric(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string format_log_line(const Json& entry) {
  std::ostringstream out;
  out << "step " << entry.value("step", int64_t{0});
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    if (it.key() == "step" || !it.value().is_number()) continue;
    out << " | " << it.key() << " " << format_metric(it.value().get<double>());
  }
  return out.str();
}

std::string format_train_bar(const TrainBarState& s, int bar_width) {
  // Appends, not `"..." + std::string`: GCC 12 warns falsely (-Wrestrict) on the latter.
  const int64_t total_steps = std::max<int64_t>(s.max_steps, 1);
  const int64_t gas = std::max<int64_t>(s.gas, 1);
  const double total = double(total_steps) * double(gas);
  const double done = std::min(total, double(s.step) * double(gas) + double(s.micro));
  const bool running = s.step < total_steps;
  // The step shown is the one in progress (its micro-batches counted), the last one at the end.
  const int64_t shown = running ? s.step + 1 : total_steps;
  std::string eta = "?";
  if (s.micro_batches_this_session > 0)
    eta = format_duration(s.elapsed_s / double(s.micro_batches_this_session) * (total - done));
  std::string out;
  if (bar_width > 0) {
    const int filled = static_cast<int>(bar_width * done / total);
    out.append("[").append(filled, '#').append(bar_width - filled, '.').append("] ");
  }
  out.append("step ").append(std::to_string(shown)).append("/").append(std::to_string(total_steps));
  if (gas > 1 && running)
    out.append(", micro ").append(std::to_string(s.micro)).append("/").append(std::to_string(gas));
  out.append(", ").append(format_duration(s.elapsed_s));
  if (bar_width > 0)
    out.append("<").append(eta);
  else
    out.append(" elapsed, ETA ").append(eta);
  if (s.loss) out.append(", loss ").append(format_metric(*s.loss));
  return out;
}

std::string format_train_bar_fitted(const TrainBarState& s, int limit) {
  // The bar narrows first; narrower than kMinBarWidth it goes, and "[] " with it (the "<ETA"
  // form stays: a 1-wide bar's line less its "[.] ").
  return fit_bar_line(
      [&](int width) {
        return width > 0 ? format_train_bar(s, width) : format_train_bar(s, 1).substr(4);
      },
      kBarWidth, kMinBarWidth, limit);
}

Console::Console(bool bar, std::FILE* out, std::optional<bool> tty, std::FILE* metrics)
    : bar_(bar), tty_(tty.value_or(isatty(fileno(out)) == 1)), out_(out), metrics_(metrics) {
  if (!tty_) last_draw_ = now_s();  // a log's first progress line comes after an interval
}

Console::~Console() {
  clear();
}

void Console::clear() {
  if (!shown_) return;
  std::fputs("\r\x1b[K", out_);
  std::fflush(out_);
  shown_ = false;
}

void Console::line(const std::string& text) {
  clear();
  clear_status_line();  // a phase spinner, if one is still drawn
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

void Console::metrics_line(const std::string& text) {
  if (metrics_ == out_) return line(text);
  clear();
  clear_status_line();
  std::fflush(out_);  // what went to the terminal through out_ comes first
  std::fprintf(metrics_, "%s\n", text.c_str());
  std::fflush(metrics_);
}

void Console::update(const TrainBarState& state, bool force) {
  if (!bar_) return;
  const double now = now_s();
  if (!tty_) {
    if (now - last_draw_ < kLineInterval) return;
    last_draw_ = now;
    std::fprintf(out_, "%s\n", format_train_bar(state, 0).c_str());
    std::fflush(out_);
    return;
  }
  if (!force && now - last_draw_ < kTtyInterval) return;
  last_draw_ = now;
  // Fitted to the terminal: a wrapped bar could not be redrawn in place.
  std::string text = "\r";
  text.append(format_train_bar_fitted(state, progress_line_limit(terminal_columns(fileno(out_)))))
      .append("\x1b[K");
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
  shown_ = true;
}

}  // namespace sft
