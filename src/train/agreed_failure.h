// Failures every rank has alike, reported once. Under mpirun the ranks run the same checks on
// the same flags and files (preflight, reading a checkpoint), so a failure is nearly always
// every rank's, and N copies of one message bury it. agree_on_failure runs such a step on
// every rank and then votes: rank 0 prints the message for all ("error: ..." as sft's main
// does), or a rank that failed where rank 0 did not prints its own, naming itself
// ("error: rank K of N: ..."); then every rank throws AlreadyReported, which the command ends
// with the exit code and no second message. One process: the step runs as it is.
#pragma once

#include <functional>
#include <initializer_list>

#include "core/error.h"
#include "parallel/comm.h"

namespace sft {

class AlreadyReported : public Error {
 public:
  explicit AlreadyReported(int exit_code)
      : Error("train", "already reported by the ranks"), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }  // 2 for a UsageError, else 1

 private:
  int exit_code_;
};

// `groups` together span the ranks (the data- and tensor-parallel groups, or the world; null
// entries are skipped); `main_rank`: this is world rank 0. `step` must use no collective of
// them. Throws AlreadyReported on every rank when `step` threw an sft::Error on any.
void agree_on_failure(std::initializer_list<Comm*> groups, bool main_rank,
                      const std::function<void()>& step);

}  // namespace sft
