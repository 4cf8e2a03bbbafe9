#include "train/metrics_log.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "io/atomic_file.h"

namespace sft {

namespace {

double wall_time() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string format_number(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(t / 3600),
                  static_cast<long long>(t / 60 % 60), static_cast<long long>(t % 60));
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", static_cast<long long>(t / 60),
                  static_cast<long long>(t % 60));
  return buf;
}

}  // namespace

std::string format_log_line(const Json& entry) {
  std::ostringstream out;
  out << "step " << entry.value("step", int64_t{0});
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    if (it.key() == "step" || !it.value().is_number()) continue;
    out << " | " << it.key() << " " << format_number(it.value().get<double>());
  }
  return out.str();
}

MetricsLog::MetricsLog(const MetricsLogOptions& options) : options_(options) {
  std::filesystem::create_directories(options.output_dir);
  jsonl_path_ = options.output_dir + "/metrics.jsonl";
  jsonl_ = std::fopen(jsonl_path_.c_str(), "a");
  if (!jsonl_) fail("train", "cannot open " + jsonl_path_ + " for writing: " + errno_text(errno));
  if (options.tensorboard_dir)
    tensorboard_ = std::make_unique<TensorBoardWriter>(*options.tensorboard_dir, wall_time());
  tty_ = options.progress_bar && isatty(STDERR_FILENO);
  if (options.wandb) {
    const WandbStart& w = *options.wandb;
    wandb_ = std::make_unique<WandbRun>(w.settings, w.config, w.num_parameters, wall_time());
    message(wandb_->start_message());
  }
}

MetricsLog::~MetricsLog() {
  clear_bar();
  if (jsonl_) std::fclose(jsonl_);
  // Unwinding from an error: WandbRun's destructor records exit code 1.
  if (wandb_ && std::uncaught_exceptions() == 0) {
    try {
      wandb_->finish(0, wall_time());
      message(wandb_->finish_message());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
  }
}

void MetricsLog::log(const Json& entry) {
  const std::string line = entry.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), jsonl_) != line.size() || std::fflush(jsonl_) != 0)
    fail("train", "cannot write " + jsonl_path_ + ": " + errno_text(errno));
  const int64_t step = entry.at("step").get<int64_t>();
  if (tensorboard_) {
    const double now = wall_time();
    for (auto it = entry.begin(); it != entry.end(); ++it) {
      if (it.key() == "step" || !it.value().is_number()) continue;
      const std::string& k = it.key();
      const std::string tag = k.rfind("eval_", 0) == 0 ? "eval/" + k.substr(5) : "train/" + k;
      tensorboard_->add_scalar(tag, static_cast<float>(it.value().get<double>()), step, now);
    }
  }
  if (wandb_) wandb_->log(entry, wall_time());
  message(format_log_line(entry));
}

void MetricsLog::progress(int64_t step, double loss, double elapsed_s, int64_t steps_this_session) {
  if (!tty_) return;
  const int64_t total = std::max<int64_t>(options_.max_steps, 1);
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * std::min<int64_t>(step, total) / total);
  const double per_step = steps_this_session > 0 ? elapsed_s / steps_this_session : NAN;
  std::string bar(filled, '#');
  bar.resize(kWidth, '.');
  char line[256];
  std::snprintf(line, sizeof line, "\r[%s] %lld/%lld  %s<%s  loss %.4g  ", bar.c_str(),
                static_cast<long long>(step), static_cast<long long>(total),
                format_duration(elapsed_s).c_str(),
                format_duration(per_step * static_cast<double>(total - step)).c_str(), loss);
  std::fputs(line, stderr);
  std::fflush(stderr);
  bar_shown_ = true;
}

void MetricsLog::clear_bar() {
  if (!bar_shown_) return;
  std::fputs("\r\033[K", stderr);
  bar_shown_ = false;
}

void MetricsLog::message(const std::string& text) {
  clear_bar();
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
  if (wandb_) wandb_->output(text, wall_time());
}

void MetricsLog::truncate_after(int64_t step) {
  std::ifstream in(jsonl_path_);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      if (Json::parse(line).value("step", int64_t{0}) > step) continue;
    } catch (const Json::exception&) {
      continue;  // a line cut by a kill
    }
    kept += line + "\n";
  }
  in.close();
  std::fclose(jsonl_);
  write_file_atomically(jsonl_path_, kept);
  jsonl_ = std::fopen(jsonl_path_.c_str(), "a");
  if (!jsonl_) fail("train", "cannot open " + jsonl_path_ + " for writing: " + errno_text(errno));
}

}  // namespace sft
