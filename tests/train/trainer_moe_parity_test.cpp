// sft's Trainer against TRL's SFTTrainer on mixtures of experts (train/trainer_moe_parity_run.h):
// the tiny Qwen3-MoE of tests/fixtures/trainer_moe, and the tiny gpt-oss of
// tests/fixtures/trainer_moe_gpt_oss (router and expert biases, the clamped SwiGLU, attention
// sinks, sliding and full layers).
#include <gtest/gtest.h>

#include "train/trainer_moe_parity_run.h"

namespace sft {
namespace {

TEST(TrainerMoeParity, LossAuxLossAndGradNormMatchTrl) {
  test::expect_moe_trl_parity("trainer_moe", Device::kCpu);
}

TEST(TrainerMoeParity, GptOssLossAuxLossAndGradNormMatchTrl) {
  test::expect_moe_trl_parity("trainer_moe_gpt_oss", Device::kCpu);
}

}  // namespace
}  // namespace sft
