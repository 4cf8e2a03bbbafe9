// Fault injection for tests: every hook the trainer has for them, read from the environment
// once, and called at named points of a step or a save (the trainer's only ties to them).
//
//   SFT_TEST_FAULT=<kill|hang|nan|term>:<rank>:<step>   on that world rank, at that step
//     nan   after the micro-batches, before any sum: the rank's loss is NaN, so every rank
//           sees a non-finite step and stops before the update
//     kill  SIGKILL, once the step's statistics are summed, before the gradient reduction
//     hang  waits forever at the same point: it never joins the gradient reduction
//     term  SIGTERM at the same point: a stop request reaching this rank only
//     int   SIGINT at the same point to what launched the job, as a Ctrl-C would: the `sft
//           train --nproc_per_node` launcher ($SFT_LAUNCHER_PID), else mpirun (the parent);
//           the rank then waits (up to 20 s) until the stop reaches it, so the run stops
//           after this very step when the stop is forwarded at all
//   SFT_TEST_KILL_DURING_SAVE=<step>   SIGKILL while checkpoint-<step> is being written
//     (after its files, before the rename), to test resuming after a crash
//   SFT_TEST_SLOW_SAVE=<seconds>   every save takes that much longer (after its files): a save
//     slower than mpirun's 1 s between SIGTERM and SIGKILL, as real models' saves are
//
// tests/parallel/train_mpi.cmake (faults, tp) and the resume tests use them.
#pragma once

#include <cstdint>

namespace sft {

class TestFaults {
 public:
  // Throws on a malformed SFT_TEST_FAULT; `world_rank` picks whether it applies here.
  static TestFaults from_environment(int world_rank);

  // `step` is the step being run (global_step + 1).
  // The step's micro-batches are done; its loss sum has not been summed over ranks yet.
  void after_micro_batches(int64_t step, double& loss_sum) const;
  // The step's statistics are summed; no gradient has been reduced.
  void before_gradient_reduction(int64_t step) const;
  // checkpoint-<step> has its files and is not yet renamed into place.
  void during_save(int64_t step) const;

 private:
  char fault_ = 0;  // 'k'ill, 'h'ang, 'n'an, 't'erm or 'i'nt at fault_step_
  int64_t fault_step_ = -1;
  int64_t kill_during_save_step_ = -1;
  double slow_save_s_ = 0;
};

}  // namespace sft
