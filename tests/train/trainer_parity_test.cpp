// sft's Trainer against TRL's SFTTrainer on the trainer parity run (train/trainer_parity_run.h):
// every logged value, training and evaluation, matches TRL's.
#include <gtest/gtest.h>

#include "train/trainer_parity_run.h"

namespace sft {
namespace {

TEST(TrainerParity, LogHistoryMatchesTrl) {
  const Json golden = test::trainer_parity_golden();
  test::expect_trl_log_history(golden,
                               test::run_trainer_parity(golden, Device::kCpu, "trainer_parity"));
}

}  // namespace
}  // namespace sft
