// sft's Trainer against TRL's SFTTrainer on a mixture of experts
// (tools/make_trainer_moe_golden.py): the tiny model of tests/fixtures/<folder>/model on the 16
// text rows of tests/fixtures/train_cli in file order, padded micro-batches of 2, 2 accumulation
// steps, 10 steps, with TRL's load-balancing loss (router_aux_loss_coef from the config, added to
// the loss per micro-batch over the accumulation steps): loss, aux_loss and grad_norm within 1e-4
// relative of TRL's, and the rest of the log as trainer_parity_run.h checks it. Header-only: the
// CPU test (trainer_moe_parity_test.cpp) and the device one (tests/cuda/moe_model_test.cpp,
// built by the CUDA build and its emulation one file at a time) share it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "data/prepare.h"
#include "io/json.h"
#include "model/transformer.h"
#include "parallel/comm.h"
#include "test_paths.h"
#include "text/tokenizer.h"
#include "train/data_options.h"
#include "train/trainer.h"
#include "train/trainer_parity_run.h"

namespace sft::test {

// The run of tests/fixtures/<folder> with the model on `device` against its TRL log.
inline void expect_moe_trl_parity(const std::string& folder, Device device) {
  const std::string root = source_path("tests/fixtures/" + folder);
  const Json golden = read_json_file(root + "/trl_log_history.json", "t");
  const Json& s = golden["settings"];
  const std::string model_dir = root + "/model";
  const TrainingArgs a = golden_training_args(
      s, model_dir, fresh_output_dir(folder + "_parity_" + device_name(device)));

  data::PrepareOptions po = prepare_options_from_args(a, model_dir, "");
  po.show_progress = false;
  const std::shared_ptr<const data::PreparedDataset> rows = data::prepare_dataset(po);
  model::Transformer m = model::Transformer::load(model_dir);
  if (device != Device::kCpu) m.to_device(device);
  const text::Tokenizer tok = text::Tokenizer::from_file(model_dir);
  std::unique_ptr<Comm> comm = make_local_comm();
  TrainerSetup setup;
  setup.args = &a;
  setup.model = &m;
  setup.train = rows.get();
  setup.comm = comm.get();
  setup.shuffle = false;  // the golden uses a SequentialSampler
  setup.batching.padding_free = false;
  setup.batching.pad_token_id = *tok.token_to_id("<|endoftext|>");
  setup.console_progress = false;
  Trainer trainer(setup);
  trainer.train();

  std::vector<Json> ours;
  for (const Json& e : trainer.state().log_history)
    if (e.contains("loss")) ours.push_back(e);
  const Json& want = golden["log_history"];
  ASSERT_EQ(ours.size(), want.size());
  double worst[3] = {0, 0, 0};
  const char* keys[3] = {"loss", "aux_loss", "grad_norm"};
  for (size_t i = 0; i < ours.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    const Json& w = want[i];
    const Json& g = ours[i];
    EXPECT_EQ(g["step"], w["step"]);
    EXPECT_DOUBLE_EQ(g["num_tokens"].get<double>(), w["num_tokens"].get<double>());
    EXPECT_NEAR(g["learning_rate"].get<double>(), w["learning_rate"].get<double>(), 1e-12);
    for (int k = 0; k < 3; ++k) {
      ASSERT_TRUE(g.contains(keys[k])) << keys[k];
      const double ref = w[keys[k]], got = g[keys[k]];
      worst[k] = std::max(worst[k], std::fabs(got - ref) / ref);
      EXPECT_NEAR(got, ref, 1e-4 * ref) << keys[k];
    }
    EXPECT_NEAR(g["mean_token_accuracy"].get<double>(), w["mean_token_accuracy"].get<double>(),
                1e-6);
  }
  std::printf(
      "%s on %s: largest relative difference from TRL: loss %.2e, aux_loss %.2e, grad_norm "
      "%.2e\n",
      folder.c_str(), device_name(device), worst[0], worst[1], worst[2]);
}

}  // namespace sft::test
