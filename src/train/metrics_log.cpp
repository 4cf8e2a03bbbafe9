#include "train/metrics_log.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/clock.h"
#include "core/error.h"
#include "io/atomic_file.h"

namespace sft {

namespace {

double wall_time() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

MetricsLog::MetricsLog(const MetricsLogOptions& options)
    : options_(options), console_(options.progress_bar) {
  std::filesystem::create_directories(options.output_dir);
  jsonl_path_ = options.output_dir + "/metrics.jsonl";
  jsonl_ = std::fopen(jsonl_path_.c_str(), "a");
  if (!jsonl_) fail("train", "cannot open " + jsonl_path_ + " for writing: " + errno_text(errno));
  if (options.tensorboard_dir) {
    tensorboard_ = std::make_unique<TensorBoardWriter>(*options.tensorboard_dir, wall_time());
    for (const auto& [tag, text] : options.tensorboard_texts)
      tensorboard_->add_text(tag, text, 0, wall_time());
  }
  bar_.max_steps = options.max_steps;
  if (options.wandb) {
    const WandbStart& w = *options.wandb;
    wandb_ = std::make_unique<WandbRun>(w.settings, w.config, w.num_parameters, wall_time());
    message(wandb_->start_message());
  }
}

MetricsLog::~MetricsLog() {
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
  // On stdout (console.h), and in W&B's console log like any line.
  const std::string text = format_log_line(entry);
  console_.metrics_line(text);
  if (wandb_) wandb_->output(text, wall_time());
}

void MetricsLog::progress_begin(int64_t step) {
  bar_.step = step;
  bar_.micro = 0;
  bar_.micro_batches_this_session = 0;
  bar_start_ = now_s();
  bar_.elapsed_s = 0;
  console_.update(bar_, true);
}

void MetricsLog::micro_batch_done(int64_t micro, int64_t gas) {
  bar_.micro = micro;
  bar_.gas = gas;
  ++bar_.micro_batches_this_session;
  bar_.elapsed_s = now_s() - bar_start_;
  console_.update(bar_, false);
}

void MetricsLog::step_done(int64_t step, double loss) {
  bar_.step = step;
  bar_.micro = 0;
  bar_.loss = loss;
  bar_.elapsed_s = now_s() - bar_start_;
  console_.update(bar_, true);
}

void MetricsLog::message(const std::string& text) {
  console_.line(text);
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
