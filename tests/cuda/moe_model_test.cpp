// A mixture-of-experts Transformer's training step on the CUDA device: the MoE parity
// fixtures' logits, cross-entropy loss, load-balancing (aux) loss and every gradient equal the
// CPU fp32 step of the same model within 1e-5 relative (issue 27's bar, as model_test.cpp),
// with the aux loss weighted 1 so that its gradient path (the router load's sums, the row onto
// every probability) weighs in every router gradient. Also with padding (the load's mask on
// the device), under gradient checkpointing (the routing rebuilt in the backward), the aux
// loss's gradient alone, and a repeated step: no cudaMalloc, the same bits (no atomics). And
// the trainer's 10 steps of TRL's MoE golden on the device.
// On the emulation (tests/cuda/emulation/run.sh) this checks that every MoE op of the step
// reaches a CUDA kernel and that the routing crosses between host and device where it should.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "io/safetensors.h"
#include "model/transformer.h"
#include "ops/cuda/cuda_memory.h"
#include "test_paths.h"
#include "train/trainer_moe_parity_run.h"

namespace sft::model {
namespace {

using cuda_test::relative_error;
using cuda_test::Values;

// One forward (logits) + backward at `scale` (the cross-entropy's; 0 leaves the aux loss's
// gradient alone), read back to the host whatever the model's device.
struct MoeStep {
  Values logits;
  double loss = 0, aux = 0;
  std::vector<std::pair<std::string, Values>> grads;
};

MoeStep run_step(Transformer& model, const Batch& batch, std::optional<double> scale = {}) {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  std::vector<float> logits(static_cast<size_t>(T * model.config().vocab_size));
  const LossStats stats = model.forward(batch, logits.data());
  model.zero_grad();
  model.backward(scale.value_or(1.0 / static_cast<double>(stats.count)));
  MoeStep r;
  r.logits.assign(logits.begin(), logits.end());
  r.loss = stats.loss_sum / static_cast<double>(stats.count);
  r.aux = model.router_aux_loss();
  for (const Parameter& p : model.trainable().all()) {
    std::vector<float> g(static_cast<size_t>(p.grad.numel()));
    copy_bytes(g.data(), Device::kCpu, p.grad.data, p.grad.device, g.size() * sizeof(float));
    r.grads.push_back({p.spec.name, Values(g.begin(), g.end())});
  }
  return r;
}

Batch fixture_batch(const std::string& dir) {
  const SafetensorsFile expected = SafetensorsFile::open(dir + "/expected.safetensors");
  auto ids = [&](const char* name) {
    const auto v = expected.tensor(name).values<int64_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  };
  return {ids("input_ids"), ids("labels"), ids("doc_lengths")};
}

// The device step vs the CPU's at 1e-5 relative; returns the worst gradient's error.
double expect_step_near(const MoeStep& got, const MoeStep& ref, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_LE(relative_error(got.logits, ref.logits), 1e-5) << "logits";
  EXPECT_LE(std::abs(got.loss - ref.loss), 1e-5 * std::abs(ref.loss))
      << "loss " << got.loss << " vs " << ref.loss;
  EXPECT_GT(ref.aux, 0);
  EXPECT_LE(std::abs(got.aux - ref.aux), 1e-5 * ref.aux) << "aux " << got.aux << " vs " << ref.aux;
  EXPECT_EQ(got.grads.size(), ref.grads.size());
  double worst = 0;
  for (size_t i = 0; i < ref.grads.size() && i < got.grads.size(); ++i) {
    EXPECT_EQ(got.grads[i].first, ref.grads[i].first);
    const double err = relative_error(got.grads[i].second, ref.grads[i].second);
    EXPECT_LE(err, 1e-5) << "gradient of " << ref.grads[i].first;
    worst = std::max(worst, err);
  }
  return worst;
}

// A model of the fixture on `device` with the aux loss weighted 1.
Transformer load(const std::string& dir, Device device, bool checkpointing = false) {
  Transformer m = Transformer::load(dir);
  if (device != Device::kCpu) m.to_device(device);
  m.set_router_aux_loss_weight(1.0);
  m.set_gradient_checkpointing(checkpointing);
  return m;
}

class CudaMoeModel : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaMoeModel, StepOnTheDeviceEqualsTheCpuStep) {
  SFT_SKIP_WITHOUT_CUDA();
  const std::string dir = test::source_path(std::string("tests/fixtures/parity/") + GetParam());
  Batch batch = fixture_batch(dir);
  Transformer cpu = load(dir, Device::kCpu), gpu = load(dir, Device::kCuda);
  const MoeStep ref = run_step(cpu, batch), got = run_step(gpu, batch);
  const double worst = expect_step_near(got, ref, "step");
  std::printf("[cuda moe] %s: logits %.3g, loss %.3g, aux %.3g, worst gradient %.3g\n", GetParam(),
              relative_error(got.logits, ref.logits), std::abs(got.loss - ref.loss),
              std::abs(got.aux - ref.aux), worst);

  // The same batch again: no cudaMalloc, the same bits.
  const int64_t before = ops::cuda::device_allocations();
  const MoeStep again = run_step(gpu, batch);
  EXPECT_EQ(ops::cuda::device_allocations(), before) << "cudaMalloc in a repeated step";
  EXPECT_TRUE(cuda_test::same_bits(again.logits, got.logits));
  EXPECT_EQ(again.aux, got.aux);
  for (size_t i = 0; i < got.grads.size(); ++i)
    EXPECT_TRUE(cuda_test::same_bits(again.grads[i].second, got.grads[i].second))
        << got.grads[i].first;

  // The aux loss's gradient alone (the cross-entropy's scale 0).
  const MoeStep aux_ref = run_step(cpu, batch, 0.0), aux_got = run_step(gpu, batch, 0.0);
  expect_step_near(aux_got, aux_ref, "aux gradient alone");

  // Padding: every fifth token left out of the load's counts (and so of the aux loss).
  batch.padding.assign(batch.tokens.size(), 0);
  for (size_t t = 3; t < batch.padding.size(); t += 5) batch.padding[t] = 1;
  const MoeStep pad_ref = run_step(cpu, batch), pad_got = run_step(gpu, batch);
  expect_step_near(pad_got, pad_ref, "padded");
  EXPECT_NE(pad_ref.aux, ref.aux) << "the padding changed nothing";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaMoeModel,
                         ::testing::Values("qwen3_moe_topk_norm", "olmoe_experts",
                                           "mixtral_experts_sliding", "gpt_oss_experts_sinks"));

// Gradient checkpointing: the backward recomputes each layer's forward, routing included.
TEST(CudaMoeModelModes, GradientCheckpointingOnTheDeviceEqualsTheCpu) {
  SFT_SKIP_WITHOUT_CUDA();
  const std::string dir = test::source_path("tests/fixtures/parity/qwen3_moe_topk_norm");
  const Batch batch = fixture_batch(dir);
  Transformer cpu = load(dir, Device::kCpu, true), gpu = load(dir, Device::kCuda, true);
  const MoeStep ref = run_step(cpu, batch), got = run_step(gpu, batch);
  std::printf("[cuda moe] gradient checkpointing: worst gradient %.3g\n",
              expect_step_near(got, ref, "gradient checkpointing"));
}

// The trainer on the device against TRL's goldens of mixtures of experts (tests/fixtures/
// trainer_moe and trainer_moe_gpt_oss, tools/make_trainer_moe_golden.py; the CPU's runs are
// trainer_moe_parity_test.cpp): padded micro-batches of 2 (the padding mask in the load's counts),
// 2 accumulation steps, TRL's load-balancing loss; loss, aux_loss and grad_norm of each logged step
// within 1e-4 relative of TRL's (the CPU test's bar), num_tokens exact.
TEST(CudaMoeTrainer, TrlMoeGoldenOnTheDevice) {
  SFT_SKIP_WITHOUT_CUDA();
  test::expect_moe_trl_parity("trainer_moe", Device::kCuda);
}

TEST(CudaMoeTrainer, TrlGptOssGoldenOnTheDevice) {
  SFT_SKIP_WITHOUT_CUDA();
  test::expect_moe_trl_parity("trainer_moe_gpt_oss", Device::kCuda);
}

}  // namespace
}  // namespace sft::model
