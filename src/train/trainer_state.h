// trainer_state.json as transformers' TrainerState writes it (dataclass fields, sorted keys,
// indent 2), so tools that read HF runs read ours; it is also what a resume restores the
// log history and counters from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/json.h"

namespace sft {

struct TrainerState {
  double epoch = 0;
  int64_t global_step = 0;
  int64_t max_steps = 0;
  int64_t logging_steps = 500;
  int64_t eval_steps = 500;
  int64_t save_steps = 500;
  int64_t num_train_epochs = 0;
  std::optional<int64_t> train_batch_size;
  int64_t num_input_tokens_seen = 0;
  double total_flos = 0;
  std::vector<Json> log_history;  // one object per log event, e.g. {"loss", "grad_norm",
                                  // "learning_rate", "epoch", "step"}
  std::optional<double> best_metric;
  std::optional<int64_t> best_global_step;
  std::optional<std::string> best_model_checkpoint;
};

Json trainer_state_to_json(const TrainerState& state);
// Reads what trainer_state_to_json wrote (or what transformers wrote); `source` names the file in
// errors.
TrainerState trainer_state_from_json(const Json& json, const std::string& source);

// Writes `dir`/trainer_state.json atomically, formatted as Python's json.dumps(indent=2,
// sort_keys=True).
void save_trainer_state(const TrainerState& state, const std::string& dir);
TrainerState load_trainer_state(const std::string& dir);

}  // namespace sft
