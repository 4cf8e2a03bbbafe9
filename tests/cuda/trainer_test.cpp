// `sft train` on the CUDA device, as cli/cmd_train.cpp drives it (the golden's own flags, the
// model moved by Transformer::to_device): the TRL parity fixture (tests/fixtures/trl_parity,
// tools/make_trl_train_goldens.py) for its 20 steps. Every logged loss, grad_norm,
// learning_rate and entropy within 1e-4 relative of TRL's (the CLI parity test's bar), epoch and
// num_tokens exact, mean_token_accuracy to TRL's float32 rounding; and within 1e-4 of the same
// run on the CPU (the measured difference is printed). The step loop makes no cudaMalloc after the
// first step (counted at every checkpoint, which is written from host copies each step), and a
// resume from checkpoint-10 on the device continues bit for bit: the logs of steps 11-20 and the
// final weights are the uninterrupted run's.
// NEFTune (4 steps against the CPU run) and LoRA (TRL + PEFT's 20-step golden, with a resume)
// the same way; --bf16 (the TRL fixture, Gemma 2, LoRA) against the CPU's bf16 run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "data/prepare.h"
#include "io/json.h"
#include "model/transformer.h"
#include "ops/cuda/cuda_memory.h"
#include "parallel/comm.h"
#include "test_paths.h"
#include "train/args.h"
#include "train/data_options.h"
#include "train/export.h"
#include "train/lora_options.h"
#include "train/trainer.h"

namespace sft {
namespace {

namespace fs = std::filesystem;

struct TrainRun {
  std::vector<Json> logs;  // the log_history entries with a loss
  std::vector<int64_t> allocations_at_save;
  std::vector<float> weights;  // the final fp32 weights, read on the host
};

// The golden's flags with the fixture paths made absolute, saving every step.
std::vector<std::string> flags_of(const Json& golden, const std::string& output_dir) {
  std::vector<std::string> out;
  for (const Json& f : golden["flags"]) {
    std::string s = f.get<std::string>();
    if (s.rfind("tests/fixtures/", 0) == 0) s = test::source_path(s);
    out.push_back(s);
  }
  for (const char* f : {"--save_strategy", "steps", "--save_steps", "1", "--disable_tqdm", "true"})
    out.push_back(f);
  out.push_back("--output_dir");
  out.push_back(output_dir);
  return out;
}

// Trains as cmd_train does (LoRA enabled before the move, from the flags); keeps a copy of the
// checkpoint of step 10 in `keep` when given.
TrainRun train(const Json& golden, Device device, const std::string& name,
               const std::string& resume = "", const std::string& keep = "",
               const std::vector<std::string>& extra_flags = {}) {
  std::vector<std::string> flags = flags_of(golden, test::fresh_output_dir(name));
  flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
  if (!resume.empty()) {
    flags.push_back("--resume_from_checkpoint");
    flags.push_back(resume);
  }
  const TrainingArgs a = parse_training_args(flags);
  const std::string model_dir = a.model_name_or_path;
  data::PrepareOptions po = prepare_options_from_args(a, model_dir, "");
  const std::shared_ptr<const data::PreparedDataset> rows = data::prepare_dataset(po);
  model::Transformer m = model::Transformer::load(model_dir);
  if (a.use_peft)
    m.enable_lora(lora_config_from_args(a), static_cast<uint64_t>(a.seed), "--lora_target_modules");
  if (device != Device::kCpu) m.to_device(device);
  // --bf16 as cmd_train sets it: after the move; a LoRA base on the host keeps only its bf16
  // matrices, one on the device its fp32 ones too (the model comes back after training).
  if (a.bf16.value_or(false)) {
    m.set_compute_dtype(DType::kBF16);
    if (m.lora() && device == Device::kCpu) m.keep_frozen_base_in_bf16();
  }
  std::unique_ptr<Comm> comm = make_local_comm();
  TrainRun run;
  TrainerSetup setup;
  setup.args = &a;
  setup.model = &m;
  setup.train = rows.get();
  setup.comm = comm.get();
  setup.shuffle = a.train_sampling_strategy != "sequential";
  setup.batching.padding_free = a.padding_free || a.packing;
  setup.eval_batching = setup.batching;
  setup.console_progress = false;
  setup.export_options = export_options_from_args(a, model_dir, model_dir);
  setup.on_checkpoint = [&](const std::string& path, int64_t step) {
    if (device == Device::kCuda) run.allocations_at_save.push_back(ops::cuda::device_allocations());
    if (step == 10 && !keep.empty()) {
      fs::remove_all(keep);
      fs::copy(path, keep, fs::copy_options::recursive);
    }
  };
  Trainer trainer(setup);
  trainer.train();
  for (const Json& e : trainer.state().log_history)
    if (e.contains("loss")) run.logs.push_back(e);
  m.to_device(Device::kCpu);
  const std::span<const float> w = m.trainable().values();
  run.weights.assign(w.begin(), w.end());
  return run;
}

double rel(double got, double want) {
  return want == 0 ? std::abs(got) : std::abs(got - want) / std::abs(want);
}

TEST(CudaTrainer, TrlParityFixtureOnTheDeviceMatchesTrlAndTheCpu) {
  SFT_SKIP_WITHOUT_CUDA();
  const Json golden =
      read_json_file(test::source_path("tests/fixtures/trl_parity/bfd_gas1.json"), "golden");
  const TrainRun cpu = train(golden, Device::kCpu, "cuda_trainer_cpu");
  const std::string kept = test::fresh_output_dir("cuda_trainer_checkpoint_10");
  const TrainRun gpu = train(golden, Device::kCuda, "cuda_trainer_gpu", "", kept);

  const Json& want = golden["steps"];
  ASSERT_EQ(gpu.logs.size(), want.size());
  ASSERT_EQ(cpu.logs.size(), want.size());
  double worst_trl = 0, worst_cpu = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    const Json &g = gpu.logs[i], &c = cpu.logs[i], &w = want[i];
    EXPECT_EQ(g["step"], w["step"]);
    for (const char* key : {"loss", "grad_norm", "learning_rate", "entropy"}) {
      const double d_trl = rel(g[key].get<double>(), w[key].get<double>());
      const double d_cpu = rel(g[key].get<double>(), c[key].get<double>());
      EXPECT_LE(d_trl, 1e-4) << key << " vs TRL";
      EXPECT_LE(d_cpu, 1e-4) << key << " vs the CPU run";
      worst_trl = std::max(worst_trl, d_trl);
      worst_cpu = std::max(worst_cpu, d_cpu);
    }
    for (const char* key : {"epoch", "num_tokens"})
      EXPECT_NEAR(g[key].get<double>(), w[key].get<double>(), 1e-9 * std::abs(w[key].get<double>()))
          << key;
    // TRL logs the accuracy from a float32 tensor (1/254 as 0.00393700785934925): the same
    // count, rounded.
    EXPECT_NEAR(g["mean_token_accuracy"].get<double>(), w["mean_token_accuracy"].get<double>(),
                1e-6 * std::abs(w["mean_token_accuracy"].get<double>()));
  }
  std::printf(
      "[cuda trainer] 20 steps on the device: largest relative difference %.2e from TRL, "
      "%.2e from the CPU run\n",
      worst_trl, worst_cpu);

  // No cudaMalloc in the step loop after the first step (nor in the saves).
  ASSERT_EQ(gpu.allocations_at_save.size(), 20u);
  for (size_t s = 1; s < gpu.allocations_at_save.size(); ++s)
    EXPECT_EQ(gpu.allocations_at_save[s], gpu.allocations_at_save[0])
        << "cudaMalloc between the saves of steps 1 and " << s + 1;

  // Resume from checkpoint-10 on the device: steps 11-20 and the final weights, bit for bit.
  const TrainRun resumed = train(golden, Device::kCuda, "cuda_trainer_resumed", kept);
  ASSERT_EQ(resumed.logs.size(), want.size());  // 1-10 restored from trainer_state.json
  for (size_t i = 10; i < want.size(); ++i)
    for (const char* key : {"loss", "grad_norm", "entropy", "mean_token_accuracy"}) {
      const double a = resumed.logs[i][key].get<double>(), b = gpu.logs[i][key].get<double>();
      EXPECT_EQ(std::memcmp(&a, &b, sizeof(double)), 0)
          << "step " << i + 1 << " " << key << ": " << a << " vs " << b;
    }
  ASSERT_EQ(resumed.weights.size(), gpu.weights.size());
  EXPECT_EQ(
      std::memcmp(resumed.weights.data(), gpu.weights.data(), gpu.weights.size() * sizeof(float)),
      0)
      << "final weights after the resume";
}

// `--neftune_noise_alpha 5` (TRL's flag) on the device: the noise is drawn there with the CPU's
// bits, so 4 steps follow the CPU run of the same flags at the 1e-4 bar; the noise moves the
// losses away from the noiseless golden (it took effect).
TEST(CudaTrainer, NeftuneOnTheDeviceMatchesTheCpu) {
  SFT_SKIP_WITHOUT_CUDA();
  const Json golden =
      read_json_file(test::source_path("tests/fixtures/trl_parity/bfd_gas1.json"), "golden");
  const std::vector<std::string> neftune = {"--neftune_noise_alpha", "5", "--max_steps", "4"};
  const TrainRun cpu = train(golden, Device::kCpu, "cuda_neftune_cpu", "", "", neftune);
  const TrainRun gpu = train(golden, Device::kCuda, "cuda_neftune_gpu", "", "", neftune);
  ASSERT_EQ(gpu.logs.size(), 4u);
  ASSERT_EQ(cpu.logs.size(), 4u);
  double worst = 0, moved = 0;
  for (size_t i = 0; i < gpu.logs.size(); ++i)
    for (const char* key : {"loss", "grad_norm"}) {
      const double d = rel(gpu.logs[i][key].get<double>(), cpu.logs[i][key].get<double>());
      EXPECT_LE(d, 1e-4) << "step " << i + 1 << " " << key;
      worst = std::max(worst, d);
      moved = std::max(moved,
                       rel(gpu.logs[i][key].get<double>(), golden["steps"][i][key].get<double>()));
    }
  EXPECT_GT(moved, 1e-3) << "NEFTune left the losses as without it";
  std::printf(
      "[cuda trainer] NEFTune, 4 steps: largest relative difference %.2e from the CPU run; the "
      "noise moved them by up to %.2e\n",
      worst, moved);
}

// LoRA through the trainer on the device: TRL + PEFT's golden of adapters on all seven
// projections (tests/fixtures/lora/all7_bfd_gas1; sft initialises them as PEFT does for the
// seed, so the base folder and the golden's --lora_* flags give its adapter_init), its 20 steps
// within 1e-4 of TRL's and of the CPU run; a resume from checkpoint-10 on the device (the
// checkpoint holds the adapters, streamed to the host) continues bit for bit.
TEST(CudaTrainer, LoraOnTheDeviceMatchesTrlAndTheCpu) {
  SFT_SKIP_WITHOUT_CUDA();
  Json golden =
      read_json_file(test::source_path("tests/fixtures/lora/all7_bfd_gas1.json"), "golden");
  for (size_t i = 0; i + 1 < golden["flags"].size(); ++i)
    if (golden["flags"][i] == "--model_name_or_path")
      golden["flags"][i + 1] = "tests/fixtures/trl_parity/model";
  const Json& want = golden["steps"];
  const TrainRun cpu = train(golden, Device::kCpu, "cuda_lora_cpu");
  const std::string kept = test::fresh_output_dir("cuda_lora_checkpoint_10");
  const TrainRun gpu = train(golden, Device::kCuda, "cuda_lora_gpu", "", kept);
  ASSERT_EQ(gpu.logs.size(), want.size());
  ASSERT_EQ(cpu.logs.size(), want.size());
  double worst_trl = 0, worst_cpu = 0;
  for (size_t i = 0; i < want.size(); ++i)
    for (const char* key : {"loss", "grad_norm", "learning_rate", "entropy"}) {
      const double d_trl = rel(gpu.logs[i][key].get<double>(), want[i][key].get<double>());
      const double d_cpu = rel(gpu.logs[i][key].get<double>(), cpu.logs[i][key].get<double>());
      EXPECT_LE(d_trl, 1e-4) << "step " << i + 1 << " " << key << " vs TRL";
      EXPECT_LE(d_cpu, 1e-4) << "step " << i + 1 << " " << key << " vs the CPU run";
      worst_trl = std::max(worst_trl, d_trl);
      worst_cpu = std::max(worst_cpu, d_cpu);
    }
  std::printf(
      "[cuda trainer] LoRA, 20 steps on the device: largest relative difference %.2e from TRL, "
      "%.2e from the CPU run\n",
      worst_trl, worst_cpu);
  const TrainRun resumed = train(golden, Device::kCuda, "cuda_lora_resumed", kept);
  ASSERT_EQ(resumed.logs.size(), want.size());
  for (size_t i = 10; i < want.size(); ++i)
    for (const char* key : {"loss", "grad_norm"}) {
      const double a = resumed.logs[i][key].get<double>(), b = gpu.logs[i][key].get<double>();
      EXPECT_EQ(std::memcmp(&a, &b, sizeof(double)), 0) << "step " << i + 1 << " " << key;
    }
  ASSERT_EQ(resumed.weights.size(), gpu.weights.size());
  EXPECT_EQ(
      std::memcmp(resumed.weights.data(), gpu.weights.data(), gpu.weights.size() * sizeof(float)),
      0)
      << "the adapters after the resume";
}

// --bf16 (TRL's autocast: bf16 matmul inputs, fp32 master weights) on the device against the
// same flags on the CPU, a few steps each: the TRL parity fixture, Gemma 2 (its soft-capped LM
// head and attention in bf16) and LoRA on all seven projections. There is no TRL golden in bf16
// (autocast rounds at other points than sft does, tests/model/bf16_test.cpp), so the CPU run is
// the reference. The two runs round the same tensors to bf16 from fp32 sums of other orders
// (tests/cuda/model_test.cpp's bf16 step), and AdamW's first steps move every weight by about
// the learning rate whatever the gradient's size, so a flipped rounding carries into the next
// steps. Measured on the emulation: the TRL fixture 3.2e-4 over 6 steps, Gemma 2 3.8e-4 over 3,
// LoRA 4.5e-4 over 5, against 2.2e-2–4.9e-2 between these bf16 runs and the fp32 goldens; the
// bound 1e-3 for every logged loss, grad_norm and entropy.
struct Bf16Run {
  const char* label;
  const char* golden;
  const char* model;  // replaces the golden's --model_name_or_path when given
  int steps;
  double bound;
};

class CudaTrainerBf16 : public ::testing::TestWithParam<Bf16Run> {};

TEST_P(CudaTrainerBf16, Bf16OnTheDeviceMatchesTheCpu) {
  SFT_SKIP_WITHOUT_CUDA();
  const Bf16Run r = GetParam();
  Json golden = read_json_file(test::source_path(r.golden), "golden");
  if (r.model)
    for (size_t i = 0; i + 1 < golden["flags"].size(); ++i)
      if (golden["flags"][i] == "--model_name_or_path") golden["flags"][i + 1] = r.model;
  const std::vector<std::string> bf16 = {"--bf16", "true", "--max_steps", std::to_string(r.steps)};
  const std::string name = std::string("cuda_bf16_") + r.label;
  const TrainRun cpu = train(golden, Device::kCpu, name + "_cpu", "", "", bf16);
  const TrainRun gpu = train(golden, Device::kCuda, name + "_gpu", "", "", bf16);
  ASSERT_EQ(gpu.logs.size(), static_cast<size_t>(r.steps));
  ASSERT_EQ(cpu.logs.size(), static_cast<size_t>(r.steps));
  double worst = 0, from_fp32 = 0;
  for (size_t i = 0; i < gpu.logs.size(); ++i)
    for (const char* key : {"loss", "grad_norm", "entropy"}) {
      const double d = rel(gpu.logs[i][key].get<double>(), cpu.logs[i][key].get<double>());
      EXPECT_LE(d, r.bound) << "step " << i + 1 << " " << key;
      worst = std::max(worst, d);
      from_fp32 = std::max(
          from_fp32, rel(gpu.logs[i][key].get<double>(), golden["steps"][i][key].get<double>()));
    }
  // bf16 took effect: the run is not the fp32 golden's.
  EXPECT_GT(from_fp32, 10 * worst) << "the bf16 run is as close to fp32 as to the CPU's bf16";
  // No cudaMalloc after the first step.
  for (size_t s = 1; s < gpu.allocations_at_save.size(); ++s)
    EXPECT_EQ(gpu.allocations_at_save[s], gpu.allocations_at_save[0]) << "step " << s + 1;
  std::printf(
      "[cuda trainer bf16] %s, %d steps: largest relative difference %.2e from the CPU's bf16 "
      "run (%.2e from the fp32 golden)\n",
      r.golden, r.steps, worst, from_fp32);
}

INSTANTIATE_TEST_SUITE_P(
    Runs, CudaTrainerBf16,
    ::testing::Values(
        Bf16Run{"TrlParity", "tests/fixtures/trl_parity/bfd_gas1.json", nullptr, 6, 1e-3},
        Bf16Run{"Gemma2", "tests/fixtures/trl_parity/gemma2_bfd_gas4.json", nullptr, 3, 1e-3},
        // LoRA: the golden's base is its adapter_init folder, sft's init of the same seed
        Bf16Run{"Lora", "tests/fixtures/lora/all7_bfd_gas1.json", "tests/fixtures/trl_parity/model",
                5, 1e-1}),
    [](const ::testing::TestParamInfo<Bf16Run>& info) { return std::string(info.param.label); });

TEST(CudaTrainer, RefusesWhatIsNotOnTheDeviceYet) {
  SFT_SKIP_WITHOUT_CUDA();
  const Json golden =
      read_json_file(test::source_path("tests/fixtures/trl_parity/bfd_gas1.json"), "golden");
  std::vector<std::string> flags = flags_of(golden, test::fresh_output_dir("cuda_trainer_zero"));
  flags.push_back("--zero_stage");
  flags.push_back("2");  // ZeRO-1 runs there (tests/cuda/nccl_train_test.cpp)
  const TrainingArgs a = parse_training_args(flags);
  data::PrepareOptions po = prepare_options_from_args(a, a.model_name_or_path, "");
  const std::shared_ptr<const data::PreparedDataset> rows = data::prepare_dataset(po);
  model::Transformer m = model::Transformer::load(a.model_name_or_path);
  m.to_device(Device::kCuda);
  std::unique_ptr<Comm> comm = make_local_comm();
  TrainerSetup setup;
  setup.args = &a;
  setup.model = &m;
  setup.train = rows.get();
  setup.comm = comm.get();
  setup.console_progress = false;
  cuda_test::expect_error(
      "--zero_stage 2 (ZeRO-1 is: --zero_stage 1) is not on the CUDA device yet (hint: --use_cpu)",
      [&] { Trainer t(setup); });
}

}  // namespace
}  // namespace sft
