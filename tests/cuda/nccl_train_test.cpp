// Training on the device over NCCL, under mpirun -np 2 (tests/cuda/emulation/run.sh: the NCCL
// calls served by the emulated NCCL over MPI), against one process on the device, as
// tests/parallel/train_mpi.cmake checks the CPU's: the tiny Qwen3 of tests/fixtures/generate_text
// on train_cli's rows, 4 rows per optimizer step, 4 steps, lr 2e-4 with clipping and weight decay.
//   DP 2     2 rows per rank, the gradients all-reduced on the device (Trainer's NCCL comm),
//            each layer's as the backward completes it (the overlap; also over 2 micro-batches
//            of 1 row), and without the overlap (SFT_NCCL_OVERLAP=0) the same bits
//   ZeRO-1   the same with --zero_stage 1: reduce-scattered, AdamW on the own shard, gathered
//   TP 2     4 rows on both ranks, the model split over them (row-parallel outputs, activation
//            gradients and q/k norms' partial gradients summed by NCCL on the device)
// Every logged loss, grad_norm, accuracy and entropy and the final weights within 1e-5 relative
// of the one-process run (the CPU's bar for the same runs); each run's measured difference is
// printed; DP rerun gives the same bits. Each rank runs the one-process reference itself (on its
// own emulated device). Every run saves checkpoints at steps 2 and 4 (from host copies: the TP
// slices gathered, the ZeRO-1 moments too); ZeRO-1 and TP resumed from checkpoint-2 end with
// the uninterrupted run's logs and weights, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "data/prepare.h"
#include "io/json.h"
#include "model/transformer.h"
#include "nccl_test_support.h"
#include "parallel/groups.h"
#include "scoped_env.h"
#include "test_paths.h"
#include "train/args.h"
#include "train/data_options.h"
#include "train/device_step.h"
#include "train/export.h"
#include "train/tp_gather.h"
#include "train/trainer.h"

#ifdef SFT_NCCL_EMULATED
#include <nccl.h>  // the emulation's nccl_emulated_calls
#endif

namespace sft {
namespace {

using nccl_test::world;

struct TrainRun {
  std::vector<Json> logs;      // log_history entries with a loss
  std::vector<float> weights;  // the final whole model's fp32 weights (world rank 0)
  // Collectives the emulated NCCL served during train(), and those on a stream of their own
  // (the overlap's); -1 outside the emulation.
  long nccl_calls = -1, stream_calls = -1;
  std::string output_dir;  // this rank's (world rank 0's holds the checkpoints)
};

// World rank 0's checkpoint-2 of `run`, which every rank resumes from.
std::string checkpoint_2(const TrainRun& run) {
  const std::string mine = "_rank" + std::to_string(world().rank());
  return run.output_dir.substr(0, run.output_dir.size() - mine.size()) + "_rank0/checkpoint-2";
}

// A resume from checkpoint-2 continues bit for bit: the same logs and final weights.
void expect_same_run(const TrainRun& resumed, const TrainRun& whole, const char* what) {
  EXPECT_EQ(resumed.weights, whole.weights) << what << ": final weights";
  ASSERT_EQ(resumed.logs.size(), whole.logs.size()) << what;
  for (size_t i = 0; i < whole.logs.size(); ++i)
    for (const char* key : {"loss", "grad_norm", "entropy"})
      EXPECT_EQ(resumed.logs[i][key], whole.logs[i][key]) << what << ", step " << i + 1 << key;
}

long nccl_calls() {
#ifdef SFT_NCCL_EMULATED
  return nccl_emulated_calls();
#else
  return -1;
#endif
}
long stream_calls() {
#ifdef SFT_NCCL_EMULATED
  return nccl_emulated_stream_calls();
#else
  return -1;
#endif
}

// Trains on the device over `dp` (and `tp`, with the model split over tp_group).
TrainRun train(const std::string& name, Comm& dp, Comm* tp, ShardGroup* tp_group, int batch,
               const std::vector<std::string>& extra = {}) {
  const std::string model_dir = test::source_path("tests/fixtures/generate_text");
  std::vector<std::string> flags = {
      "--model_name_or_path",
      model_dir,
      "--dataset_name",
      test::source_path("tests/fixtures/train_cli/train.jsonl"),
      "--max_length",
      "32",
      "--learning_rate",
      "2e-4",
      "--logging_steps",
      "1",
      "--gradient_checkpointing",
      "false",
      "--bf16",
      "false",
      "--disable_tqdm",
      "true",
      "--max_grad_norm",
      "1.0",
      "--weight_decay",
      "0.01",
      "--max_steps",
      "4",
      "--save_strategy",
      "steps",
      "--save_steps",
      "2",
      "--per_device_train_batch_size",
      std::to_string(batch),
      "--output_dir",
      test::fresh_output_dir(name + "_rank" + std::to_string(world().rank()))};
  flags.insert(flags.end(), extra.begin(), extra.end());
  const TrainingArgs a = parse_training_args(flags);
  TrainRun run;
  run.output_dir = a.output_dir;
  data::PrepareOptions po = prepare_options_from_args(a, model_dir, "");
  const std::shared_ptr<const data::PreparedDataset> rows = data::prepare_dataset(po);
  model::Transformer m = model::Transformer::load(model_dir, model::TensorParallel::of(tp_group));
  m.to_device(Device::kCuda);
  TrainerSetup setup;
  setup.args = &a;
  setup.model = &m;
  setup.train = rows.get();
  setup.comm = &dp;
  setup.tp_comm = tp;
  setup.shuffle = a.train_sampling_strategy != "sequential";
  setup.console_progress = false;
  setup.export_options = export_options_from_args(a, model_dir, model_dir);
  {
    const long calls_before = nccl_calls(), stream_before = stream_calls();
    Trainer trainer(setup);
    trainer.train();
    run.nccl_calls = nccl_calls() - calls_before;
    run.stream_calls = stream_calls() - stream_before;
    for (const Json& e : trainer.state().log_history)
      if (e.contains("loss")) run.logs.push_back(e);
  }
  model::Transformer host = host_copy(m);
  std::optional<model::Transformer> whole;
  if (tp_group) whole = gather_full_model(host, *tp_group);
  const model::Transformer* final_model = tp_group ? (whole ? &*whole : nullptr) : &host;
  if (final_model) {
    const std::span<const float> w = final_model->trainable().values();
    run.weights.assign(w.begin(), w.end());
  }
  return run;
}

TrainRun one_process() {
  static const TrainRun reference = [] {
    std::unique_ptr<Comm> local = make_local_comm();
    return train("nccl_one_process", *local, nullptr, nullptr, 4);
  }();
  return reference;
}

double rel(double got, double want) {
  return want == 0 ? std::abs(got) : std::abs(got - want) / std::abs(want);
}

// The logs and (where this rank has them) the weights within 1e-5 of the one-process run.
// `same_micro_batches`: false when the run splits its rows into other micro-batches, whose
// means TRL's accuracy and entropy average (so they differ by definition there).
void expect_like_one_process(const TrainRun& got, const char* what,
                             bool same_micro_batches = true) {
  const TrainRun want = one_process();
  ASSERT_EQ(got.logs.size(), want.logs.size()) << what;
  double worst = 0;
  std::vector<const char*> keys = {"loss", "grad_norm", "num_tokens"};
  if (same_micro_batches) keys.insert(keys.end(), {"mean_token_accuracy", "entropy"});
  for (size_t i = 0; i < want.logs.size(); ++i)
    for (const char* key : keys) {
      const double d = rel(got.logs[i][key].get<double>(), want.logs[i][key].get<double>());
      EXPECT_LE(d, 1e-5) << what << ", step " << i + 1 << ", " << key;
      worst = std::max(worst, d);
    }
  double worst_w = 0, max_ref = 0;
  if (!got.weights.empty()) {
    EXPECT_EQ(got.weights.size(), want.weights.size()) << what;
    for (size_t i = 0; i < std::min(got.weights.size(), want.weights.size()); ++i) {
      worst_w = std::max(worst_w, std::abs(double(got.weights[i]) - double(want.weights[i])));
      max_ref = std::max(max_ref, std::abs(double(want.weights[i])));
    }
    EXPECT_LE(worst_w, 1e-5 * max_ref) << what << ": final weights";
  }
  if (world().rank() == 0)
    std::printf(
        "[nccl train] %s vs one process: logs within %.2e, weights within %.2e of max |w|\n", what,
        worst, max_ref > 0 ? worst_w / max_ref : 0.0);
}

TEST(NcclTrain, DataParallelTwoOnTheDeviceIsOneProcess) {
  SFT_SKIP_WITHOUT_RANKS();
  one_process();  // first, on every rank alike (it is no collective)
  const int batch = 4 / world().size();
  const TrainRun first = train("nccl_dp", world(), nullptr, nullptr, batch);
  expect_like_one_process(first, "DP");
  // The overlap: per step each of the 2 layers' runs as its backward completes, then the rest
  // (the embedding before them, the final norm after), all on the communicator's stream.
  if (nccl_calls() >= 0) {
    EXPECT_EQ(first.nccl_calls, 4 * (2 + 2));
    EXPECT_EQ(first.stream_calls, first.nccl_calls);
  }
  const TrainRun again = train("nccl_dp_again", world(), nullptr, nullptr, batch);
  EXPECT_EQ(again.weights, first.weights) << "a rerun is bit-identical";
  for (size_t i = 0; i < first.logs.size(); ++i)
    EXPECT_EQ(again.logs[i]["loss"], first.logs[i]["loss"]) << "rerun, step " << i + 1;
  // Two micro-batches per step: only the last backward starts the all-reduces.
  const TrainRun accumulated = train("nccl_dp_gas2", world(), nullptr, nullptr, batch / 2,
                                     {"--gradient_accumulation_steps", "2"});
  expect_like_one_process(accumulated, "DP, 2 micro-batches", false);
  if (nccl_calls() >= 0) EXPECT_EQ(accumulated.nccl_calls, 4 * (2 + 2));
  // Without the overlap: one all-reduce of the whole arena per step, the same bits.
  test::ScopedEnv no_overlap("SFT_NCCL_OVERLAP", "0");
  const TrainRun whole = train("nccl_dp_whole", world(), nullptr, nullptr, batch);
  EXPECT_EQ(whole.weights, first.weights) << "the overlap changes no bit";
  for (size_t i = 0; i < first.logs.size(); ++i)
    for (const char* key : {"loss", "grad_norm"})
      EXPECT_EQ(whole.logs[i][key], first.logs[i][key]) << "step " << i + 1 << ", " << key;
  if (nccl_calls() >= 0) {
    EXPECT_EQ(whole.nccl_calls, 4) << "one gradient all-reduce per step";
    EXPECT_EQ(whole.stream_calls, 0);
  }
}

TEST(NcclTrain, ZeroOneOnTheDeviceIsOneProcess) {
  SFT_SKIP_WITHOUT_RANKS();
  one_process();
  const TrainRun got =
      train("nccl_zero1", world(), nullptr, nullptr, 4 / world().size(), {"--zero_stage", "1"});
  expect_like_one_process(got, "ZeRO-1");
  // Per step: the reduce-scatter, the weights' all-gather.
  if (nccl_calls() >= 0) EXPECT_EQ(got.nccl_calls, 8);
  // Its checkpoint holds the whole moments (gathered from the device shards); a resume loads
  // each rank's shard back onto the device.
  const TrainRun resumed =
      train("nccl_zero1_resumed", world(), nullptr, nullptr, 4 / world().size(),
            {"--zero_stage", "1", "--resume_from_checkpoint", checkpoint_2(got)});
  expect_same_run(resumed, got, "ZeRO-1 resumed from checkpoint-2");
}

TEST(NcclTrain, TensorParallelTwoOnTheDeviceIsOneProcess) {
  SFT_SKIP_WITHOUT_RANKS();
  one_process();
  ParallelGroups g = make_parallel_groups(world(), world().size());
  const TrainRun got = train("nccl_tp", *g.dp, g.tp.get(), g.tp_group.get(), 4);
  expect_like_one_process(got, "TP");
  // Its checkpoint is a whole model gathered from host copies of the slices; a resume splits it.
  const TrainRun resumed = train("nccl_tp_resumed", *g.dp, g.tp.get(), g.tp_group.get(), 4,
                                 {"--resume_from_checkpoint", checkpoint_2(got)});
  expect_same_run(resumed, got, "TP resumed from checkpoint-2");
  // Per step and layer at least: o's and down's outputs, the two blocks' input gradients.
  if (nccl_calls() >= 0) EXPECT_GE(got.nccl_calls, 4 * 2 * 4);
}

}  // namespace
}  // namespace sft
