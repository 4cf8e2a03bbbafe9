#include "train/trainer_state.h"

#include <filesystem>

#include "io/atomic_file.h"

namespace sft {

namespace {

template <typename T>
Json optional_json(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

}  // namespace

Json trainer_state_to_json(const TrainerState& s) {
  return {
      {"best_global_step", optional_json(s.best_global_step)},
      {"best_metric", optional_json(s.best_metric)},
      {"best_model_checkpoint", optional_json(s.best_model_checkpoint)},
      {"epoch", s.epoch},
      {"eval_steps", s.eval_steps},
      {"global_step", s.global_step},
      {"is_hyper_param_search", false},
      {"is_local_process_zero", true},
      {"is_world_process_zero", true},
      {"log_history", s.log_history},
      {"logging_steps", s.logging_steps},
      {"max_steps", s.max_steps},
      {"num_input_tokens_seen", s.num_input_tokens_seen},
      {"num_train_epochs", s.num_train_epochs},
      {"save_steps", s.save_steps},
      {"stateful_callbacks", Json::object()},
      {"total_flos", s.total_flos},
      {"train_batch_size", optional_json(s.train_batch_size)},
      {"trial_name", nullptr},
      {"trial_params", nullptr},
  };
}

TrainerState trainer_state_from_json(const Json& j, const std::string& source) {
  if (!j.is_object()) {
    fail_in_file("checkpoint", {source, ""}, "expected a JSON object",
                 "restore the file from the checkpoint it came with");
  }
  TrainerState s;
  try {
    s.epoch = j.value("epoch", 0.0);
    s.global_step = j.value("global_step", int64_t{0});
    s.max_steps = j.value("max_steps", int64_t{0});
    s.logging_steps = j.value("logging_steps", int64_t{500});
    s.eval_steps = j.value("eval_steps", int64_t{500});
    s.save_steps = j.value("save_steps", int64_t{500});
    s.num_train_epochs = j.value("num_train_epochs", int64_t{0});
    if (j.contains("train_batch_size") && !j["train_batch_size"].is_null())
      s.train_batch_size = j["train_batch_size"];
    s.num_input_tokens_seen = j.value("num_input_tokens_seen", int64_t{0});
    s.total_flos = j.value("total_flos", 0.0);
    if (j.contains("log_history")) s.log_history = j["log_history"].get<std::vector<Json>>();
    if (j.contains("best_metric") && !j["best_metric"].is_null()) s.best_metric = j["best_metric"];
    if (j.contains("best_global_step") && !j["best_global_step"].is_null())
      s.best_global_step = j["best_global_step"];
    if (j.contains("best_model_checkpoint") && !j["best_model_checkpoint"].is_null()) {
      s.best_model_checkpoint = j["best_model_checkpoint"];
    }
  } catch (const Json::exception& e) {
    fail_in_file("checkpoint", {source, ""}, std::string("unexpected value: ") + e.what(),
                 "restore the file from the checkpoint it came with");
  }
  return s;
}

void save_trainer_state(const TrainerState& state, const std::string& dir) {
  write_file_atomically((std::filesystem::path(dir) / "trainer_state.json").string(),
                        trainer_state_to_json(state).dump(2) + "\n");
}

TrainerState load_trainer_state(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "trainer_state.json").string();
  return trainer_state_from_json(read_json_file(path, "checkpoint"), path);
}

}  // namespace sft
