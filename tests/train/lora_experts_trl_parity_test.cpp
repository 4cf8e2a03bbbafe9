// sft's Trainer with LoRA on the experts (PEFT's target_parameters, besides q_proj and v_proj)
// against TRL's SFTTrainer + PEFT 0.21 (tools/make_lora_expert_trl_golden.py): the run of
// trainer_moe_parity_run.h (the tiny Qwen3-MoE and gpt-oss of tests/fixtures/trainer_moe*, the
// 16 rows of tests/fixtures/train_cli in file order, padded micro-batches of 2, 2 accumulation
// steps, the load-balancing loss, 10 steps) started from PEFT's initial adapter
// (tests/fixtures/lora_experts/trl_<family>/adapter_init): loss, aux_loss and grad_norm within
// 1e-4 relative of TRL's at every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "data/prepare.h"
#include "io/json.h"
#include "model/transformer.h"
#include "parallel/comm.h"
#include "test_paths.h"
#include "text/tokenizer.h"
#include "train/adapter_io.h"
#include "train/data_options.h"
#include "train/trainer.h"
#include "train/trainer_parity_run.h"

namespace sft {
namespace {

namespace fs = std::filesystem;

void expect_lora_experts_trl_parity(const std::string& family) {
  // The adapter names its base relative to the repository root.
  const fs::path old = fs::current_path();
  fs::current_path(test::source_path("."));
  const std::string root = "tests/fixtures/lora_experts/trl_" + family;
  const Json golden = read_json_file(root + "/trl_log_history.json", "t");
  std::string model_dir;
  model::Transformer m = load_model_with_adapter(root + "/adapter_init", "main", &model_dir);
  ASSERT_EQ(m.lora()->expert_adapters().size(), 4u);
  TrainingArgs a = test::golden_training_args(golden["settings"], model_dir,
                                              test::fresh_output_dir("lora_experts_trl_" + family));
  a.use_peft = true;
  a.lora_dropout = 0;
  data::PrepareOptions po = prepare_options_from_args(a, model_dir, "");
  po.show_progress = false;
  const std::shared_ptr<const data::PreparedDataset> rows = data::prepare_dataset(po);
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
  fs::current_path(old);

  std::vector<Json> ours;
  for (const Json& e : trainer.state().log_history)
    if (e.contains("loss")) ours.push_back(e);
  const Json& want = golden["log_history"];
  ASSERT_EQ(ours.size(), want.size());
  double worst[3] = {0, 0, 0};
  const char* keys[3] = {"loss", "aux_loss", "grad_norm"};
  for (size_t i = 0; i < ours.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    EXPECT_EQ(ours[i]["step"], want[i]["step"]);
    EXPECT_DOUBLE_EQ(ours[i]["num_tokens"].get<double>(), want[i]["num_tokens"].get<double>());
    for (int k = 0; k < 3; ++k) {
      ASSERT_TRUE(ours[i].contains(keys[k])) << keys[k];
      const double ref = want[i][keys[k]], got = ours[i][keys[k]];
      worst[k] = std::max(worst[k], std::fabs(got - ref) / ref);
      EXPECT_NEAR(got, ref, 1e-4 * ref) << keys[k];
    }
  }
  std::printf(
      "LoRA on %s's experts: largest relative difference from TRL + PEFT: loss %.2e, "
      "aux_loss %.2e, grad_norm %.2e\n",
      family.c_str(), worst[0], worst[1], worst[2]);
}

TEST(LoraExpertsTrlParity, Qwen3MoeLossAuxLossAndGradNormMatchTrlAndPeft) {
  expect_lora_experts_trl_parity("qwen3_moe");
}

TEST(LoraExpertsTrlParity, GptOssLossAuxLossAndGradNormMatchTrlAndPeft) {
  expect_lora_experts_trl_parity("gpt_oss");
}

}  // namespace
}  // namespace sft
