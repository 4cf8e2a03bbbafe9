// The training console: log lines and the per-micro-batch bar (see console.h).
#include "train/console.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/clock.h"
#include "core/progress.h"
#include "core/progress_phase.h"

namespace sft {

namespace {

constexpr int kBarWidth = 20;           // leaves room for the text in 80 columns
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
    out = "[" + std::string(filled, '#') + std::string(bar_width - filled, '.') + "] ";
  }
  out += "step " + std::to_string(shown) + "/" + std::to_string(total_steps);
  if (gas > 1 && running) out += ", micro " + std::to_string(s.micro) + "/" + std::to_string(gas);
  if (bar_width > 0)
    out += ", " + format_duration(s.elapsed_s) + "<" + eta;
  else
    out += ", " + format_duration(s.elapsed_s) + " elapsed, ETA " + eta;
  if (s.loss) out += ", loss " + format_metric(*s.loss);
  return out;
}

Console::Console(bool bar, std::FILE* out, std::optional<bool> tty)
    : bar_(bar), tty_(tty.value_or(isatty(fileno(out)) == 1)), out_(out) {
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
  const std::string text = "\r" + format_train_bar(state, kBarWidth) + "\x1b[K";
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
  shown_ = true;
}

}  // namespace sft
