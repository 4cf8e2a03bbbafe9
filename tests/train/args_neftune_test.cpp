// --neftune_noise_alpha and --eval_on_start: NEFTune's uniform noise on the embedding output
// (transformers' neftune_post_forward_hook: magnitude alpha / sqrt(L * hidden), training only,
// here seeded so that a run and its resume draw the same noise), and one evaluation before the
// first step.
#include <gtest/gtest.h>

#include <cmath>

#include "memory_dataset.h"
#include "test_paths.h"
#include "train/trainer.h"

namespace sft {

namespace {

model::Batch small_batch() {
  model::Batch b;
  for (int64_t t = 0; t < 10; ++t) {
    b.tokens.push_back(1 + (t * 7) % 40);
    b.labels.push_back(b.tokens.back());
  }
  return b;
}

std::vector<float> embedding_output(model::Transformer& m) {
  for (const NamedTensor& a : m.activations()) {
    if (a.name == "embed") {
      const auto v = a.tensor.values<float>();
      return {v.begin(), v.end()};
    }
  }
  ADD_FAILURE() << "no embed activation";
  return {};
}

struct TrainRun {
  std::vector<Json> log;
  std::vector<float> params;
};

TrainRun train(const TrainingArgs& args, const data::PreparedDataset& data,
               const data::PreparedDataset* eval) {
  model::Transformer m = model::Transformer::random(test::tiny_config(), 5);
  std::unique_ptr<Comm> comm = make_local_comm();
  TrainerSetup s;
  s.args = &args;
  s.model = &m;
  s.train = &data;
  s.eval = eval;
  s.comm = comm.get();
  s.console_progress = false;
  Trainer t(s);
  t.train();
  TrainRun r;
  r.log = t.state().log_history;
  for (const NamedTensor& p : m.parameters()) {
    const auto v = p.tensor.values<float>();
    r.params.insert(r.params.end(), v.begin(), v.end());
  }
  return r;
}

TrainingArgs args_in(const std::string& name) {
  TrainingArgs a;
  a.model_name_or_path = "tiny";
  a.dataset_name = "memory";
  a.output_dir = test::fresh_output_dir(name);
  a.max_steps = 4;
  a.per_device_train_batch_size = 2;
  a.gradient_accumulation_steps = 2;
  a.learning_rate = 1e-2;
  a.logging_steps = 1;
  a.save_steps = 2;
  a.gradient_checkpointing = false;
  return a;
}

std::vector<double> losses(const TrainRun& r, const char* key) {
  std::vector<double> out;
  for (const Json& e : r.log)
    if (e.contains(key)) out.push_back(e[key].get<double>());
  return out;
}

}  // namespace

TEST(Neftune, NoiseIsUniformInTheMagnitudeSeededAndForOneForward) {
  model::Transformer m = model::Transformer::random(test::tiny_config(), 3);
  const model::Batch b = small_batch();
  m.forward(b);
  const std::vector<float> clean = embedding_output(m);
  m.arm_embedding_noise(0.1, 7, 3);
  m.forward(b);
  const std::vector<float> noisy = embedding_output(m);
  ASSERT_EQ(clean.size(), noisy.size());
  double max_abs = 0, sum = 0, sum_abs = 0;
  for (size_t i = 0; i < clean.size(); ++i) {
    const double d = double(noisy[i]) - double(clean[i]);
    max_abs = std::max(max_abs, std::fabs(d));
    sum += d;
    sum_abs += std::fabs(d);
  }
  const double n = static_cast<double>(clean.size());
  EXPECT_LE(max_abs, 0.1 + 1e-6);
  EXPECT_GT(max_abs, 0.09);              // 160 draws reach the edge
  EXPECT_NEAR(sum_abs / n, 0.05, 0.01);  // E|U(-a, a)| = a / 2
  EXPECT_NEAR(sum / n, 0.0, 0.015);
  // Same seed and stream: the same noise; another stream: other noise; unarmed: none.
  m.arm_embedding_noise(0.1, 7, 3);
  m.forward(b);
  EXPECT_EQ(embedding_output(m), noisy);
  m.arm_embedding_noise(0.1, 7, 4);
  m.forward(b);
  EXPECT_NE(embedding_output(m), noisy);
  m.forward(b);
  EXPECT_EQ(embedding_output(m), clean);
}

TEST(Neftune, ChangesTrainingNotEvaluationAndResumesBitForBit) {
  const test::MemoryDataset data = test::random_dataset(11, 48, 21);
  const test::MemoryDataset eval = test::random_dataset(5, 48, 99);
  TrainingArgs plain = args_in("neftune_plain");
  plain.eval_strategy = "steps";
  plain.eval_steps = 2;
  plain.eval_on_start = true;
  TrainingArgs noisy = plain;
  noisy.output_dir = test::fresh_output_dir("neftune_noisy");
  noisy.neftune_noise_alpha = 5.0;
  const TrainRun a = train(plain, data, &eval);
  const TrainRun b = train(noisy, data, &eval);
  // --eval_on_start: an evaluation at step 0, before any update, the same with and without
  // NEFTune because evaluation never adds noise.
  ASSERT_FALSE(a.log.empty());
  EXPECT_TRUE(a.log.front().contains("eval_loss")) << a.log.front().dump();
  EXPECT_EQ(a.log.front()["step"], 0);
  EXPECT_EQ(losses(a, "eval_loss").front(), losses(b, "eval_loss").front());
  const std::vector<double> la = losses(a, "loss"), lb = losses(b, "loss");
  ASSERT_EQ(la.size(), 4u);
  ASSERT_EQ(lb.size(), 4u);
  EXPECT_NE(la[0], lb[0]);  // the noisy embeddings change the first step's loss already
  EXPECT_NEAR(la[0], lb[0], 0.5);

  // A resume from checkpoint-2 draws the same noise: the same log and weights.
  TrainingArgs resumed = noisy;
  resumed.output_dir = test::fresh_output_dir("neftune_resumed");
  resumed.eval_on_start = false;
  resumed.resume_from_checkpoint = noisy.output_dir + "/checkpoint-2";
  const TrainRun c = train(resumed, data, &eval);
  EXPECT_EQ(losses(c, "loss"), lb);
  EXPECT_EQ(c.params, b.params);
}

}  // namespace sft
