// Where the trainer's log events go: output_dir/metrics.jsonl (one JSON object per event,
// full precision), TensorBoard scalars (as transformers' TensorBoardCallback names them:
// "train/loss", "eval/loss"), a W&B offline run (history rows and console lines, wandb_run.h),
// and the console (a live progress bar with step/total, ETA and
// the last loss on a terminal; plain lines otherwise). Only rank 0 makes one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "io/json.h"
#include "train/tensorboard_writer.h"
#include "train/wandb_run.h"

namespace sft {

struct MetricsLogOptions {
  std::string output_dir;
  std::optional<std::string> tensorboard_dir;  // set when report_to has tensorboard
  std::optional<WandbStart> wandb;             // set when report_to has wandb (wandb_run.h)
  bool progress_bar = true;                    // a bar when stderr is a terminal
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
  // Redraws the bar after an optimizer step (no-op without a terminal).
  void progress(int64_t step, double loss, double elapsed_s, int64_t steps_this_session);
  // Prints a message on its own line (clearing the bar first).
  void message(const std::string& text);
  // On resume: drops metrics.jsonl lines logged after `step` (a run killed after its last
  // checkpoint logged steps that the resumed run repeats).
  void truncate_after(int64_t step);

 private:
  void clear_bar();

  MetricsLogOptions options_;
  std::string jsonl_path_;
  std::FILE* jsonl_ = nullptr;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
  std::unique_ptr<WandbRun> wandb_;
  bool tty_ = false;
  bool bar_shown_ = false;
};

// "loss 1.2346 | grad_norm 0.5 | ..." — a log event as one console line (4 significant
// digits, as people read them).
std::string format_log_line(const Json& entry);

}  // namespace sft
