// Tensor parallelism and the files a run writes (T = 2, 4 ranks as threads):
// gather_full_model / gather_full_moments give the unsplit model and AdamW bit for bit on
// group rank 0 (nothing elsewhere); a checkpoint written from a TP = 2 snapshot has the same
// bytes as the unsplit one's; reading it back into TP = 2 and TP = 4 slices gives every
// rank its blocks of the weights and moments, checked against the whole shapes first.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>

#include "core/error.h"
#include "core/half.h"
#include "core/rng.h"
#include "error_of.h"
#include "model/tp_test_models.h"
#include "test_paths.h"
#include "thread_shard_group.h"
#include "train/tp_gather.h"
#include "train/train_checkpoint.h"

namespace sft {

namespace fs = std::filesystem;

namespace {

using model::TensorParallel;
using model::Transformer;

const ModelConfig& config() {
  static const ModelConfig c = test::tp_tiny_config(true, false);
  return c;
}

using test::error_of;

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The unsplit model's AdamW with distinct moments in every element.
AdamW whole_optimizer(const Transformer& whole) {
  AdamW opt(static_cast<size_t>(whole.num_parameters()), AdamWOptions{0.8, 0.99, 1e-7, 0.1});
  Rng rng(3, 0);
  for (float& v : opt.exp_avg().mutable_values<float>()) v = rng.normal();
  for (float& v : opt.exp_avg_sq().mutable_values<float>()) v = rng.uniform();
  opt.set_steps_taken(9);
  return opt;
}

// `whole`'s moments cut into `local`'s blocks, in local.trainable() order.
void expect_or_fill_local_moments(const Transformer& local, const AdamW& whole, AdamW* fill,
                                  const AdamW* check) {
  int64_t whole_offset = 0;
  for (const model::Parameter& p : local.trainable().all()) {
    const size_t n = static_cast<size_t>(shape_numel(p.spec.shape));
    for (int m = 0; m < 2; ++m) {
      const Tensor& from = m == 0 ? whole.exp_avg() : whole.exp_avg_sq();
      std::vector<float> block(n);
      model::copy_block(p.spec, reinterpret_cast<const float*>(from.bytes()) + whole_offset,
                        block.data());
      if (fill) {
        Tensor& to = m == 0 ? fill->exp_avg() : fill->exp_avg_sq();
        std::copy(block.begin(), block.end(), to.mutable_values<float>().data() + p.offset);
      }
      if (check) {
        const Tensor& got = m == 0 ? check->exp_avg() : check->exp_avg_sq();
        EXPECT_EQ(test::float_bits(reinterpret_cast<const float*>(got.bytes()) + p.offset, n),
                  test::float_bits(block.data(), n))
            << (m == 0 ? "exp_avg." : "exp_avg_sq.") << p.spec.name << " on rank "
            << local.tensor_parallel().rank;
      }
    }
    whole_offset += shape_numel(p.spec.full_shape);
  }
}

AdamW local_optimizer(const Transformer& local, const AdamW& whole) {
  AdamW opt(static_cast<size_t>(local.params().numel()), whole.options());
  expect_or_fill_local_moments(local, whole, &opt, nullptr);
  opt.set_steps_taken(whole.steps_taken());
  return opt;
}

void expect_same_moments(const AdamW& got, const AdamW& want) {
  ASSERT_EQ(got.exp_avg().numel(), want.exp_avg().numel());
  const size_t n = static_cast<size_t>(want.exp_avg().numel());
  auto f = [](const Tensor& t) { return reinterpret_cast<const float*>(t.bytes()); };
  EXPECT_EQ(test::float_bits(f(got.exp_avg()), n), test::float_bits(f(want.exp_avg()), n));
  EXPECT_EQ(test::float_bits(f(got.exp_avg_sq()), n), test::float_bits(f(want.exp_avg_sq()), n));
  EXPECT_EQ(got.steps_taken(), want.steps_taken());
  EXPECT_EQ(got.options().beta1, want.options().beta1);
  EXPECT_EQ(got.options().weight_decay, want.options().weight_decay);
}

class TensorParallelCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::fresh_output_dir(std::string("tp_checkpoint_") +
                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  // write_training_checkpoint of `model` and `opt` into dir_/name; the folder.
  std::string write(const std::string& name, Transformer& model, AdamW& opt) {
    TrainerState state;
    state.global_step = 9;
    TrainingSnapshot snapshot{&model, &opt, &state, Json{{"seed", 1}, {"tp_size", 1}}};
    const std::string folder = dir_ + "/" + name;
    write_training_checkpoint(folder, snapshot, ExportOptions{});
    return folder;
  }
  std::string dir_;
};

}  // namespace

TEST(TensorParallelGather, TheWholeModelBitForBitOnRankZeroOnly) {
  for (bool tied : {false, true}) {
    const ModelConfig c = test::tp_tiny_config(true, tied);
    const Transformer whole = Transformer::random(c, 5, 0.5f);
    for (int T : {2, 4}) {
      testing::ThreadShardGroups::run(T, [&](ShardGroup& group) {
        Transformer local = Transformer::random(c, 5, 0.5f, TensorParallel::of(&group));
        local.set_compute_dtype(DType::kBF16);
        std::optional<Transformer> gathered = gather_full_model(local, group);
        ASSERT_EQ(gathered.has_value(), group.rank() == 0);
        if (!gathered) return;
        EXPECT_FALSE(gathered->tensor_parallel().on());
        EXPECT_EQ(gathered->compute_dtype(), DType::kBF16);
        EXPECT_TRUE(gathered->params().has_bf16_copies());
        // Every parameter, as a slice of one rank of one (the whole) and byte for byte.
        test::expect_blocks_of(*gathered, whole, "gathered, T=" + std::to_string(T));
        const std::vector<NamedTensor> got = gathered->parameters(), want = whole.parameters();
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(got[i].name, want[i].name);
          EXPECT_EQ(got[i].tensor.shape(), want[i].tensor.shape());
          EXPECT_EQ(0, std::memcmp(got[i].tensor.bytes(), want[i].tensor.bytes(),
                                   want[i].tensor.nbytes()))
              << got[i].name;
        }
      });
    }
  }
}

TEST(TensorParallelGather, TheWholeMomentsInTheWholeModelsOrder) {
  const Transformer whole = Transformer::random(config(), 5, 0.5f);
  const AdamW whole_opt = whole_optimizer(whole);
  for (int T : {2, 4}) {
    testing::ThreadShardGroups::run(T, [&](ShardGroup& group) {
      const Transformer local = Transformer::random(config(), 5, 0.5f, TensorParallel::of(&group));
      const AdamW local_opt = local_optimizer(local, whole_opt);
      const std::optional<AdamW> gathered = gather_full_moments(local, local_opt, group);
      ASSERT_EQ(gathered.has_value(), group.rank() == 0);
      if (gathered) expect_same_moments(*gathered, whole_opt);
    });
  }
}

TEST(TensorParallelGather, RefusesAModelOfAnotherGroup) {
  const Transformer whole = Transformer::random(config(), 5, 0.5f);
  testing::ThreadShardGroups::run(2, [&](ShardGroup& group) {
    const std::string e = error_of([&] { (void)gather_full_model(whole, group); });
    EXPECT_NE(e.find("[train] gather_full_model: the model is rank 0 of 1"), std::string::npos)
        << e;
  });
}

TEST_F(TensorParallelCheckpoint, WrittenFromTwoRanksItIsTheUnsplitCheckpoint) {
  Transformer whole = Transformer::random(config(), 5, 0.5f);
  AdamW whole_opt = whole_optimizer(whole);
  const std::string unsplit = write("unsplit", whole, whole_opt);

  std::string split;
  testing::ThreadShardGroups::run(2, [&](ShardGroup& group) {
    const Transformer local = Transformer::random(config(), 5, 0.5f, TensorParallel::of(&group));
    const AdamW local_opt = local_optimizer(local, whole_opt);
    std::optional<Transformer> m = gather_full_model(local, group);
    std::optional<AdamW> o = gather_full_moments(local, local_opt, group);
    if (group.rank() == 0) split = write("tp2", *m, *o);
  });
  ASSERT_FALSE(split.empty());
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(unsplit))
    names.push_back(e.path().filename().string());
  EXPECT_GE(names.size(), 5u);  // model, optimizer, config, generation config, states
  for (const std::string& name : names)
    EXPECT_EQ(file_bytes(fs::path(split) / name), file_bytes(fs::path(unsplit) / name)) << name;
}

TEST_F(TensorParallelCheckpoint, ReadBackIntoTwoAndFourRanksEachGetsItsBlocks) {
  Transformer whole = Transformer::random(config(), 5, 0.5f);
  AdamW whole_opt = whole_optimizer(whole);
  const std::string folder = write("unsplit", whole, whole_opt);
  for (int T : {2, 4}) {
    testing::ThreadShardGroups::run(T, [&](ShardGroup& group) {
      Transformer local = Transformer::zeros(config(), TensorParallel::of(&group));
      local.set_compute_dtype(DType::kBF16);
      AdamW opt(static_cast<size_t>(local.params().numel()), AdamWOptions{});
      TrainerState state;
      TrainingSnapshot snapshot{&local, &opt, &state, Json::object()};
      read_training_checkpoint(folder, snapshot);
      test::expect_blocks_of(local, whole, "resumed, T=" + std::to_string(T));
      expect_or_fill_local_moments(local, whole_opt, nullptr, &opt);
      EXPECT_EQ(opt.steps_taken(), 9);
      EXPECT_EQ(state.global_step, 9);
      EXPECT_EQ(snapshot.training_state["seed"], 1);
      // The bf16 copies follow the restored weights.
      const model::Parameter& q = local.params().named("model.layers.1.self_attn.q_proj.weight");
      EXPECT_EQ(q.bf16.as<uint16_t>()[3], f32_to_bf16(q.value.as<float>()[3]));
    });
  }
}

// A vocabulary that does not divide by T (61 rows: the padded split, tensor_parallel.h): the
// gathered model and moments, and the checkpoint written from them, are the unsplit ones
// (the padding never reaches a file); read back, every rank gets its blocks, padding zero.
TEST_F(TensorParallelCheckpoint, APaddedVocabularyIsWrittenAndReadAsTheUnsplitModel) {
  for (bool tied : {false, true}) {
    const ModelConfig c = test::tp_odd_vocab_config(true, tied);
    Transformer whole = Transformer::random(c, 5, 0.5f);
    AdamW whole_opt = whole_optimizer(whole);
    const std::string unsplit =
        write(std::string("unsplit_") + (tied ? "tied" : "untied"), whole, whole_opt);
    for (int T : {2, 4}) {
      const std::string what = std::string(tied ? "tied" : "untied") + ", T=" + std::to_string(T);
      std::string split;
      testing::ThreadShardGroups::run(T, [&](ShardGroup& group) {
        const Transformer local = Transformer::random(c, 5, 0.5f, TensorParallel::of(&group));
        const AdamW local_opt = local_optimizer(local, whole_opt);
        std::optional<Transformer> m = gather_full_model(local, group);
        std::optional<AdamW> o = gather_full_moments(local, local_opt, group);
        if (group.rank() != 0) return;
        test::expect_blocks_of(*m, whole, "gathered, " + what);
        expect_same_moments(*o, whole_opt);
        split = write("tp" + std::to_string(T) + (tied ? "_tied" : "_untied"), *m, *o);
      });
      ASSERT_FALSE(split.empty());
      for (const fs::directory_entry& e : fs::directory_iterator(unsplit)) {
        const std::string name = e.path().filename().string();
        EXPECT_EQ(file_bytes(fs::path(split) / name), file_bytes(e.path())) << what << " " << name;
      }
      testing::ThreadShardGroups::run(T, [&](ShardGroup& group) {
        Transformer local = Transformer::zeros(c, TensorParallel::of(&group));
        AdamW opt(static_cast<size_t>(local.params().numel()), AdamWOptions{});
        TrainerState state;
        TrainingSnapshot snapshot{&local, &opt, &state, Json::object()};
        read_training_checkpoint(unsplit, snapshot);
        test::expect_blocks_of(local, whole, "read back, " + what);
        expect_or_fill_local_moments(local, whole_opt, nullptr, &opt);
      });
    }
  }
}

TEST_F(TensorParallelCheckpoint, ASliceModelIsNotWrittenAndWholeShapesAreChecked) {
  Transformer whole = Transformer::random(config(), 5, 0.5f);
  AdamW whole_opt = whole_optimizer(whole);
  const std::string folder = write("unsplit", whole, whole_opt);
  // Another model: intermediate 64, so the MLP tensors' whole shapes differ.
  ModelConfig wider = config();
  wider.intermediate_size = 64;
  std::mutex mu;
  std::vector<std::string> errors;
  testing::ThreadShardGroups::run(2, [&](ShardGroup& group) {
    Transformer local = Transformer::random(config(), 5, 0.5f, TensorParallel::of(&group));
    AdamW opt = local_optimizer(local, whole_opt);
    TrainerState state;
    TrainingSnapshot snapshot{&local, &opt, &state, Json::object()};
    const std::string refused = error_of([&] { write("slice", local, opt); });
    Transformer other = Transformer::zeros(wider, TensorParallel::of(&group));
    AdamW other_opt(static_cast<size_t>(other.num_parameters()), AdamWOptions{});
    TrainingSnapshot other_snapshot{&other, &other_opt, &state, Json::object()};
    const std::string mismatch =
        error_of([&] { read_training_checkpoint(folder, other_snapshot); });
    // Nothing was restored: the slice model is still all zeros.
    for (float v : other.params().values()) ASSERT_EQ(v, 0.0f);
    std::lock_guard<std::mutex> lock(mu);
    errors.push_back(refused);
    errors.push_back(mismatch);
  });
  ASSERT_EQ(errors.size(), 4u);
  for (size_t i = 0; i < errors.size(); i += 2) {
    EXPECT_NE(errors[i].find("[checkpoint] write_training_checkpoint: the model is one "
                             "tensor-parallel rank's slice"),
              std::string::npos)
        << errors[i];
    EXPECT_NE(errors[i + 1].find("tensor 'model.layers.0.mlp.gate_proj.weight': shape [32, 32], "
                                 "expected [64, 32]"),
              std::string::npos)
        << errors[i + 1];
  }
}

}  // namespace sft
