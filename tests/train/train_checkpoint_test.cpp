// Training checkpoint state: a write/read round trip restores weights, moments, step,
// trainer state and training_state bit for bit; damaged files are errors that name the
// file and tensor.
#include "train/train_checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>

#include "core/error.h"
#include "core/rng.h"
#include "error_of.h"
#include "io/safetensors.h"
#include "test_paths.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

std::vector<std::byte> bytes_of(const Tensor& t) {
  return {t.bytes(), t.bytes() + t.nbytes()};
}

std::vector<std::vector<std::byte>> param_bytes(const model::Transformer& m) {
  std::vector<std::vector<std::byte>> out;
  for (const NamedTensor& p : m.parameters()) out.push_back(bytes_of(p.tensor));
  return out;
}

void fill(Tensor& t, uint64_t seed) {
  Rng rng(seed, 0);
  for (float& v : t.mutable_values<float>()) v = rng.normal();
}

using test::error_of;

class TrainCheckpoint : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::fresh_output_dir(std::string("train_checkpoint_") +
                                  testing::UnitTest::GetInstance()->current_test_info()->name());
    source_ = test::source_path("tests/fixtures/models/llama");
    model_ = std::make_unique<model::Transformer>(model::Transformer::load(source_));
    opt_ = std::make_unique<AdamW>(static_cast<size_t>(model_->num_parameters()), AdamWOptions{});
    fill(opt_->exp_avg(), 1);
    fill(opt_->exp_avg_sq(), 2);
    opt_->set_steps_taken(7);
    state_.global_step = 7;
    state_.epoch = 0.5;
    state_.log_history.push_back({{"loss", 2.5}, {"step", 5}});
    snapshot_ = {model_.get(), opt_.get(), &state_,
                 Json{{"scheduler", {{"step", 7}}}, {"seed", 42}, {"lr", 1.0 / 3.0}}};
    ExportOptions o;
    o.source_model_dir = source_;
    write_training_checkpoint(dir_ + "/ckpt", snapshot_, o);
  }

  std::string dir_, source_;
  std::unique_ptr<model::Transformer> model_;
  std::unique_ptr<AdamW> opt_;
  TrainerState state_;
  TrainingSnapshot snapshot_;
};

}  // namespace

TEST_F(TrainCheckpoint, RoundTripRestoresEverythingBitForBit) {
  const std::string ckpt = dir_ + "/ckpt";
  for (const char* f : {"config.json", "model.safetensors", "optimizer.safetensors",
                        "training_state.json", "trainer_state.json"})
    EXPECT_TRUE(fs::is_regular_file(ckpt + "/" + f)) << f;

  const auto params = param_bytes(*model_);
  const auto avg = bytes_of(opt_->exp_avg()), avg_sq = bytes_of(opt_->exp_avg_sq());
  const Json training_state = snapshot_.training_state;

  // Mutate everything, then read back.
  for (const NamedTensor& p : model_->parameters()) model_->param_data(p.name)[0] += 1.0f;
  fill(opt_->exp_avg(), 3);
  fill(opt_->exp_avg_sq(), 4);
  opt_->set_steps_taken(0);
  state_ = TrainerState{};
  snapshot_.training_state = Json::object();

  read_training_checkpoint(ckpt, snapshot_);
  EXPECT_TRUE(params == param_bytes(*model_));
  EXPECT_TRUE(avg == bytes_of(opt_->exp_avg()));
  EXPECT_TRUE(avg_sq == bytes_of(opt_->exp_avg_sq()));
  EXPECT_EQ(opt_->steps_taken(), 7);
  EXPECT_EQ(state_.global_step, 7);
  EXPECT_EQ(state_.epoch, 0.5);
  ASSERT_EQ(state_.log_history.size(), 1u);
  EXPECT_EQ(snapshot_.training_state, training_state);
  EXPECT_EQ(snapshot_.training_state["lr"].get<double>(), 1.0 / 3.0);
}

TEST_F(TrainCheckpoint, OptimizerFileNamesMomentsByParameter) {
  const SafetensorsFile f = SafetensorsFile::open(dir_ + "/ckpt/optimizer.safetensors");
  EXPECT_EQ(f.metadata().at("step"), "7");
  EXPECT_EQ(f.metadata().at("format"), "sft-adamw");
  const TensorEntry* e = f.find("exp_avg_sq.model.layers.1.mlp.down_proj.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->shape, (Shape{64, 128}));
  EXPECT_EQ(f.entries().size(), 2 * model_->parameters().size());
}

TEST_F(TrainCheckpoint, DamagedOptimizerStateIsAnErrorNamingFileAndTensor) {
  const std::string ckpt = dir_ + "/ckpt";
  const std::string path = ckpt + "/optimizer.safetensors";
  const SafetensorsFile good = SafetensorsFile::open(path);
  std::vector<NamedTensor> tensors;
  for (const TensorEntry& e : good.entries()) tensors.push_back({e.name, good.tensor(e).clone()});
  const std::map<std::string, std::string> meta = good.metadata();
  const std::string victim = "exp_avg.model.norm.weight";

  auto rewrite = [&](const std::function<void(std::vector<NamedTensor>&)>& change) {
    std::vector<NamedTensor> t = tensors;
    change(t);
    write_safetensors(path, t, meta);
    return error_of([&] { read_training_checkpoint(ckpt, snapshot_); });
  };
  auto find = [&](std::vector<NamedTensor>& t) -> NamedTensor& {
    for (NamedTensor& n : t)
      if (n.name == victim) return n;
    throw std::logic_error("no " + victim);
  };

  std::string msg =
      rewrite([&](auto& t) { std::erase_if(t, [&](auto& n) { return n.name == victim; }); });
  EXPECT_NE(msg.find(path + ": tensor '" + victim + "': missing"), std::string::npos) << msg;

  // Nothing was restored: the weights are still this run's, not the checkpoint's.
  for (const NamedTensor& p : model_->parameters()) model_->param_data(p.name)[0] = 123.0f;
  const auto params = param_bytes(*model_);
  msg = rewrite([&](auto& t) { find(t).tensor = find(t).tensor.to(DType::kBF16); });
  EXPECT_TRUE(params == param_bytes(*model_));
  EXPECT_NE(msg.find("tensor '" + victim + "': dtype BF16, expected F32"), std::string::npos)
      << msg;

  msg = rewrite([&](auto& t) { find(t).tensor = Tensor::zeros(DType::kF32, {3}); });
  EXPECT_NE(msg.find("tensor '" + victim + "': shape [3], expected [64]"), std::string::npos)
      << msg;

  msg = rewrite([&](auto& t) { t.push_back({"exp_avg.extra", Tensor::zeros(DType::kF32, {1})}); });
  EXPECT_NE(msg.find("tensor 'exp_avg.extra': not a moment of this model"), std::string::npos)
      << msg;

  fs::remove(path);
  msg = error_of([&] { read_training_checkpoint(ckpt, snapshot_); });
  EXPECT_NE(msg.find(path + ": missing"), std::string::npos) << msg;
}

TEST_F(TrainCheckpoint, CheckpointOfAnotherModelIsRejectedBeforeAnythingChanges) {
  // The qwen3 fixture has other shapes and names than the llama one.
  model::Transformer other =
      model::Transformer::load(test::source_path("tests/fixtures/models/qwen3"));
  AdamW other_opt(static_cast<size_t>(other.num_parameters()), AdamWOptions{});
  TrainerState other_state;
  const auto before = param_bytes(other);
  TrainingSnapshot s{&other, &other_opt, &other_state, Json::object()};
  const std::string msg = error_of([&] { read_training_checkpoint(dir_ + "/ckpt", s); });
  EXPECT_EQ(msg.rfind("[checkpoint] ", 0), 0u) << msg;
  EXPECT_NE(msg.find("model.safetensors: tensor '"), std::string::npos) << msg;
  EXPECT_TRUE(before == param_bytes(other));
}

TEST_F(TrainCheckpoint, WrongDtypeWeightsAreAnError) {
  // A bf16 export is not a resumable checkpoint: the master weights must be F32.
  ExportOptions o;
  o.source_model_dir = source_;
  o.dtype = DType::kBF16;
  export_hf_model(*model_, dir_ + "/ckpt", o);
  const std::string msg = error_of([&] { read_training_checkpoint(dir_ + "/ckpt", snapshot_); });
  EXPECT_NE(msg.find("dtype BF16, expected F32"), std::string::npos) << msg;
}

}  // namespace sft
