// The data-parallel parts of the trainer that are not the step itself: the optimizer
// memory it reports, and the fault-injection hook the multi-rank tests use
// (SFT_TEST_FAULT=<kill|hang|nan|term>:<rank>:<step>, see trainer.h).
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "train/trainer.h"

namespace sft {

void Trainer::init_test_fault() {
  const char* env = std::getenv("SFT_TEST_FAULT");
  if (env == nullptr || *env == 0) return;
  const std::string spec(env);
  const size_t a = spec.find(':'), b = spec.rfind(':');
  if (a == std::string::npos || a == b)
    fail("train", "SFT_TEST_FAULT=" + spec + ": expected kill|hang|nan:<rank>:<step>");
  const std::string kind = spec.substr(0, a);
  if (kind != "kill" && kind != "hang" && kind != "nan" && kind != "term")
    fail("train", "SFT_TEST_FAULT=" + spec + ": the fault is kill, hang, nan or term");
  if (std::atoi(spec.substr(a + 1, b - a - 1).c_str()) != comm_->rank()) return;
  test_fault_ = kind[0];
  test_fault_step_ = std::atoll(spec.substr(b + 1).c_str());
}

void Trainer::maybe_inject_fault() {
  if (state_.global_step + 1 != test_fault_step_) return;
  if (test_fault_ == 'k') raise(SIGKILL);
  if (test_fault_ == 't') raise(SIGTERM);  // a stop request reaching this rank only
  if (test_fault_ == 'h')
    for (;;) pause();  // never joins the gradient reduction
}

int64_t Trainer::optimizer_state_bytes() const {
  if (zero1_) return zero1_->state_bytes();
  return 2 * model_.trainable().numel() * static_cast<int64_t>(sizeof(float));
}

}  // namespace sft
