// TestFaults: see test_faults.h.
#include "train/test_faults.h"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "train/stop_signal.h"

namespace sft {

TestFaults TestFaults::from_environment(int world_rank) {
  TestFaults faults;
  if (const char* save = std::getenv("SFT_TEST_KILL_DURING_SAVE"); save && *save)
    faults.kill_during_save_step_ = std::atoll(save);
  if (const char* slow = std::getenv("SFT_TEST_SLOW_SAVE"); slow && *slow)
    faults.slow_save_s_ = std::atof(slow);
  const char* env = std::getenv("SFT_TEST_FAULT");
  if (env == nullptr || *env == 0) return faults;
  const std::string spec(env);
  const size_t a = spec.find(':'), b = spec.rfind(':');
  if (a == std::string::npos || a == b)
    fail("train", "SFT_TEST_FAULT=" + spec + ": expected kill|hang|nan|term|int:<rank>:<step>");
  const std::string kind = spec.substr(0, a);
  if (kind != "kill" && kind != "hang" && kind != "nan" && kind != "term" && kind != "int")
    fail("train", "SFT_TEST_FAULT=" + spec + ": the fault is kill, hang, nan, term or int");
  if (std::atoi(spec.substr(a + 1, b - a - 1).c_str()) != world_rank) return faults;
  faults.fault_ = kind[0];
  faults.fault_step_ = std::atoll(spec.substr(b + 1).c_str());
  return faults;
}

void TestFaults::after_micro_batches(int64_t step, double& loss_sum) const {
  if (fault_ == 'n' && step == fault_step_) loss_sum = NAN;
}

void TestFaults::before_gradient_reduction(int64_t step) const {
  if (step != fault_step_) return;
  if (fault_ == 'k') raise(SIGKILL);
  if (fault_ == 't') raise(SIGTERM);
  if (fault_ == 'i') {
    const char* launcher = std::getenv("SFT_LAUNCHER_PID");
    kill(launcher && *launcher ? static_cast<pid_t>(std::atoll(launcher)) : getppid(), SIGINT);
    for (int i = 0; i < 2000 && !stop_requested(); ++i) usleep(10000);
  }
  if (fault_ == 'h')
    for (;;) pause();
}

void TestFaults::during_save(int64_t step) const {
  if (step == kill_during_save_step_) raise(SIGKILL);
  if (slow_save_s_ > 0) usleep(static_cast<useconds_t>(slow_save_s_ * 1e6));
}

}  // namespace sft
