// `--report_to wandb`: the run written as W&B's offline run directory, what the wandb SDK
// writes with WANDB_MODE=offline and `wandb sync <dir>` uploads:
//
//   $WANDB_DIR/wandb/offline-run-<YYYYMMDD_HHMMSS>-<id>/run-<id>.wandb   the transaction log
//   $WANDB_DIR/wandb/offline-run-.../files/   config.yaml, wandb-metadata.json, output.log,
//                                             wandb-summary.json (train/wandb_files.h)
//   $WANDB_DIR/wandb/latest-run -> offline-run-...
//
// The log holds what transformers' WandbCallback sends through the SDK, in wandb-core's
// order: header, run (config {_wandb: {}}), environment, config (model config + training
// arguments), define_metric("train/global_step"), define_metric("*", step_metric=
// "train/global_step", step_sync=True), config {model/num_parameters}; per log event a
// summary and a history record (keys renamed as rewrite_logs does: eval_x → eval/x, others
// train/x, plus train/global_step, _step, _runtime, _timestamp; train_runtime,
// train_samples_per_second, train_steps_per_second, train_loss and total_flos go to the
// summary only); console lines as output_raw; at the end an exit record (a run that dies
// leaves none, and wandb sync marks it failed).
//
// Settings from the environment, as the SDK reads them: WANDB_MODE (offline, the default
// here; dryrun = offline; online is written offline and the `wandb sync` command printed;
// disabled writes nothing), WANDB_DIR (default: the working directory), WANDB_PROJECT
// (default "huggingface", as WandbCallback), WANDB_ENTITY, WANDB_NAME (--run_name wins, as
// WandbCallback passes it to wandb.init), WANDB_RUN_ID (default: 8 random [a-z0-9]),
// WANDB_NOTES, WANDB_TAGS (comma-separated), WANDB_RUN_GROUP, WANDB_JOB_TYPE.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/json.h"
#include "train/wandb_log.h"

namespace sft {

struct WandbSettings {
  std::string mode = "offline";  // offline, online (written offline) or disabled
  std::string dir;               // the folder that gets wandb/
  std::string project = "huggingface";
  std::string entity, name, run_id, notes, group, job_type;
  std::vector<std::string> tags;
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
std::optional<std::string> process_env(const std::string& name);

// Reads the W&B variables through `env`; `run_name` is --run_name. Throws on a WANDB_MODE
// sft does not know.
WandbSettings wandb_settings_from_env(const std::optional<std::string>& run_name,
                                      const EnvLookup& env = process_env);

// What MetricsLog needs to open a run.
struct WandbStart {
  WandbSettings settings;
  Json config;  // wandb_run_config
  int64_t num_parameters = 0;
};

class WandbRun {
 public:
  // Creates the run folder and writes everything up to the metric definitions. `config` is
  // the run config (wandb_run_config), `num_parameters` model/num_parameters.
  WandbRun(const WandbSettings& settings, const Json& config, int64_t num_parameters,
           double start_time);
  // Finishes with exit code 1 when unwinding from an exception, else 0.
  ~WandbRun();
  WandbRun(const WandbRun&) = delete;
  WandbRun& operator=(const WandbRun&) = delete;

  // One metrics.jsonl event ("step" = the global step), as WandbCallback.on_log.
  void log(const Json& entry, double time);
  // A console line (without its newline).
  void output(const std::string& line, double time);
  void finish(int exit_code, double time);

  const std::string& run_dir() const { return run_dir_; }
  const std::string& run_id() const { return settings_.run_id; }
  // What the console says when the run starts and ends.
  std::string start_message() const;
  std::string finish_message() const;

 private:
  void append(const std::string& record) { log_->append(record); }
  std::string files_path(const std::string& name) const;  // run_dir/files/name
  int64_t next() { return ++num_; }

  WandbSettings settings_;
  std::string run_dir_;
  std::unique_ptr<WandbLogFile> log_;
  double start_time_ = 0;
  int64_t num_ = 0;   // Record.num of the last record
  int64_t step_ = 0;  // W&B's _step: one per history row
  bool finished_ = false;
  int uncaught_at_start_ = 0;
  Json summary_;                     // each key's last value, for files/wandb-summary.json
  std::FILE* output_log_ = nullptr;  // files/output.log
};

}  // namespace sft
