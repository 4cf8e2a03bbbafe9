// The trainer parity run (train/trainer_parity_run.h: padded micro-batches, accumulation,
// warmup and decay, weight decay, clipping, and evaluation every few steps and at the end) with
// the model on the CUDA device: every logged value, the eval_* metrics included, matches TRL's
// SFTTrainer at the CPU run's tolerances, so evaluation runs on the device as training does.
#include <gtest/gtest.h>

#include "cuda_test_support.h"
#include "train/trainer_parity_run.h"

namespace sft {
namespace {

TEST(CudaTrainerEval, TrainerParityRunWithEvaluationOnTheDeviceMatchesTrl) {
  SFT_SKIP_WITHOUT_CUDA();
  const Json golden = test::trainer_parity_golden();
  const std::vector<Json> history =
      test::run_trainer_parity(golden, Device::kCuda, "cuda_trainer_eval");
  int64_t evals = 0;
  for (const Json& e : history) evals += e.contains("eval_loss") ? 1 : 0;
  EXPECT_GT(evals, 1);  // during training and at its end
  test::expect_trl_log_history(golden, history);
}

}  // namespace
}  // namespace sft
