// The trainer parity run (tools/make_trainer_parity_golden.py): the tiny Qwen3 of
// tests/fixtures/generate_text on the 16 text rows of tests/fixtures/train_cli, rows in file
// order (the last 4 held out for eval), padded micro-batches of 2, 3 accumulation steps (a
// short last update per epoch), warmup + linear decay, weight decay, clipping, evaluation in
// batches of 3; and the check that every logged value matches TRL's SFTTrainer. Header-only:
// the CPU test (tests/train/trainer_parity_test.cpp) and the device one (tests/cuda, built by
// the CUDA build and its emulation, which compile tests one file at a time) share it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "data/prepare.h"
#include "io/json.h"
#include "model/transformer.h"
#include "parallel/comm.h"
#include "test_paths.h"
#include "text/tokenizer.h"
#include "train/data_options.h"
#include "train/subset_dataset.h"
#include "train/trainer.h"

namespace sft::test {

inline Json trainer_parity_golden() {
  return read_json_file(source_path("tests/fixtures/trainer_parity/trl_log_history.json"), "t");
}

// A golden's training settings (its "settings" object, as tools/make_trainer_*_golden.py write
// them) on tests/fixtures/train_cli's rows: no checkpoints, no gradient checkpointing.
inline TrainingArgs golden_training_args(const Json& s, const std::string& model_dir,
                                         const std::string& output_dir) {
  TrainingArgs a;
  a.model_name_or_path = model_dir;
  a.dataset_name = source_path("tests/fixtures/train_cli/train.jsonl");
  a.output_dir = output_dir;
  a.max_steps = s["max_steps"];
  a.per_device_train_batch_size = s["per_device_train_batch_size"];
  a.gradient_accumulation_steps = s["gradient_accumulation_steps"];
  a.learning_rate = s["learning_rate"];
  a.warmup_steps = s["warmup_steps"];
  a.weight_decay = s["weight_decay"];
  a.max_length = s["max_length"].get<int64_t>();
  a.logging_steps = s["logging_steps"];
  a.max_grad_norm = s["max_grad_norm"];
  a.save_strategy = "no";
  a.gradient_checkpointing = false;
  a.disable_tqdm = true;
  return a;
}

// The golden's run with the model on `device` (moved there before training); the log history.
inline std::vector<Json> run_trainer_parity(const Json& golden, Device device,
                                            const std::string& output_name) {
  const Json& s = golden["settings"];
  const std::string model_dir = source_path("tests/fixtures/generate_text");
  TrainingArgs a = golden_training_args(s, model_dir, fresh_output_dir(output_name));
  a.eval_strategy = s["eval_strategy"];
  a.eval_steps = s["eval_steps"].get<double>();
  a.per_device_eval_batch_size = s["per_device_eval_batch_size"];

  data::PrepareOptions po = prepare_options_from_args(a, model_dir, "");
  po.show_progress = false;
  const std::shared_ptr<const data::PreparedDataset> rows = data::prepare_dataset(po);
  // The golden trains on the first rows of the file and evaluates on the last eval_rows.
  const size_t n_eval = golden["eval_rows"], n = rows->num_rows();
  std::vector<size_t> train_idx(n - n_eval), eval_idx(n_eval);
  std::iota(train_idx.begin(), train_idx.end(), size_t{0});
  std::iota(eval_idx.begin(), eval_idx.end(), n - n_eval);
  const SubsetDataset train_rows(rows, train_idx), eval_rows(rows, eval_idx);
  model::Transformer m = model::Transformer::load(model_dir);
  const text::Tokenizer tok = text::Tokenizer::from_file(model_dir);
  std::unique_ptr<Comm> comm = make_local_comm();
  TrainerSetup setup;
  setup.args = &a;
  setup.model = &m;
  setup.train = &train_rows;
  setup.eval = &eval_rows;
  setup.comm = comm.get();
  setup.shuffle = false;  // the golden uses a SequentialSampler
  setup.batching.padding_free = false;
  setup.batching.pad_token_id = *tok.token_to_id("<|endoftext|>");
  setup.eval_batching = setup.batching;
  setup.console_progress = false;
  if (device != Device::kCpu) m.to_device(device);
  Trainer trainer(setup);
  trainer.train();
  return trainer.state().log_history;
}

// Every logged value of `history` against the golden's, at fp32's tolerances.
inline void expect_trl_log_history(const Json& golden, const std::vector<Json>& history) {
  std::vector<Json> ours, our_evals;
  for (const Json& e : history) {
    if (e.contains("loss")) ours.push_back(e);
    if (e.contains("eval_loss")) our_evals.push_back(e);
  }
  // Eval: per-batch mean losses weighted by rows (the last batch is short), at eval_steps and
  // at the end.
  const Json& want_evals = golden["eval_history"];
  ASSERT_EQ(our_evals.size(), want_evals.size());
  for (size_t i = 0; i < our_evals.size(); ++i) {
    SCOPED_TRACE("eval " + std::to_string(i));
    const Json& w = want_evals[i];
    const Json& g = our_evals[i];
    EXPECT_EQ(g["step"], w["step"]);
    EXPECT_DOUBLE_EQ(g["epoch"].get<double>(), w["epoch"].get<double>());
    EXPECT_DOUBLE_EQ(g["eval_num_tokens"].get<double>(), w["eval_num_tokens"].get<double>());
    EXPECT_NEAR(g["eval_loss"].get<double>(), w["eval_loss"].get<double>(),
                1e-6 * w["eval_loss"].get<double>());
    EXPECT_NEAR(g["eval_entropy"].get<double>(), w["eval_entropy"].get<double>(), 2e-5);
    EXPECT_NEAR(g["eval_mean_token_accuracy"].get<double>(),
                w["eval_mean_token_accuracy"].get<double>(), 1e-6);
  }
  const Json& want = golden["log_history"];
  ASSERT_EQ(ours.size(), want.size());
  double worst_loss = 0, worst_norm = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    const double wl = want[i]["loss"], wn = want[i]["grad_norm"];
    worst_loss = std::max(worst_loss, std::fabs(ours[i]["loss"].get<double>() - wl) / wl);
    worst_norm = std::max(worst_norm, std::fabs(ours[i]["grad_norm"].get<double>() - wn) / wn);
  }
  std::printf("largest relative difference from TRL: loss %.2e, grad_norm %.2e\n", worst_loss,
              worst_norm);
  for (size_t i = 0; i < ours.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    const Json& w = want[i];
    const Json& g = ours[i];
    EXPECT_EQ(g["step"], w["step"]);
    EXPECT_DOUBLE_EQ(g["epoch"].get<double>(), w["epoch"].get<double>());
    EXPECT_DOUBLE_EQ(g["num_tokens"].get<double>(), w["num_tokens"].get<double>());
    EXPECT_NEAR(g["learning_rate"].get<double>(), w["learning_rate"].get<double>(), 1e-12);
    // fp32 on both sides, different summation orders (measured: loss 6e-8, grad_norm 2e-6).
    EXPECT_NEAR(g["loss"].get<double>(), w["loss"].get<double>(), 1e-6 * w["loss"].get<double>());
    EXPECT_NEAR(g["grad_norm"].get<double>(), w["grad_norm"].get<double>(),
                2e-5 * w["grad_norm"].get<double>());
    EXPECT_NEAR(g["entropy"].get<double>(), w["entropy"].get<double>(), 2e-5);
    EXPECT_NEAR(g["mean_token_accuracy"].get<double>(), w["mean_token_accuracy"].get<double>(),
                1e-6);
  }
}

}  // namespace sft::test
