// Where the trainer's log events go: output_dir/metrics.jsonl (one JSON object per event,
// full precision), TensorBoard scalars (as transformers' TensorBoardCallback names them:
// "train/loss", "eval/loss"), a W&B offline run (history rows and console lines, wandb_run.h),
// and the console (train/console.h: a progress bar from before step 1 that moves per
// micro-batch, with step/total, ETA and the last loss; plain lines on a non-terminal). Only
// rank 0 makes one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/json.h"
#include "train/console.h"
#include "train/tensorboard_writer.h"
#include "train/wandb_run.h"

namespace sft {

struct MetricsLogOptions {
  std::string output_dir;
  std::optional<std::string> tensorboard_dir;  // set when report_to has tensorboard
  std::optional<WandbStart> wandb;             // set when report_to has wandb (wandb_run.h)
  // (tag, text) summaries written first, at step 0 ("args", "model_config").
  std::vector<std::pair<std::string, std::string>> tensorboard_texts;
  bool progress_bar = true;  // a bar on a terminal, a progress line every 30 s in a log
  int64_t max_steps = 0;
};

class MetricsLog {
 public:
  explicit MetricsLog(const MetricsLogOptions& options);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // One log event (HF's log_history entry plus our speed keys); "step" is required.
  void log(const Json& entry);
  // The progress bar: drawn when training (re)starts with `step` steps done, moved after each
  // micro-batch (`micro` of the `gas` of the step in progress) and after each optimizer step.
  void progress_begin(int64_t step);
  void micro_batch_done(int64_t micro, int64_t gas);
  void step_done(int64_t step, double loss);
  // Prints a message on its own line (clearing the bar first).
  void message(const std::string& text);
  // On resume: drops metrics.jsonl lines logged after `step` (a run killed after its last
  // checkpoint logged steps that the resumed run repeats).
  void truncate_after(int64_t step);

 private:
  MetricsLogOptions options_;
  std::string jsonl_path_;
  std::FILE* jsonl_ = nullptr;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
  std::unique_ptr<WandbRun> wandb_;
  Console console_;
  TrainBarState bar_;
  double bar_start_ = 0;
};

}  // namespace sft
