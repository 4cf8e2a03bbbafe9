// The counts of one optimizer step that are summed over the data-parallel ranks, so that the
// logged loss, token accuracy, entropy and token counts equal a one-process run.
//
// One f64 all-reduce per step carries them all: all_reduce_sum packs the fields into one
// buffer and unpacks the sums through for_each_field, the one list of what travels (a field
// added there is summed; nothing is addressed by its index in the buffer).
#pragma once

#include <vector>

#include "parallel/comm.h"

namespace sft {

// One micro-batch's sums (model::LossStats): the mean accuracy and entropy are taken per
// micro-batch, over every rank's rows, as TRL logs them.
struct MicroBatchCounts {
  double targets = 0, correct = 0, entropy_sum = 0;
};

struct StepCounts {
  std::vector<MicroBatchCounts> micro_batches;  // in the step's order
  double loss_sum = 0;       // Σ token losses (divided by the global target count later)
  double tokens = 0;         // real tokens
  double padded_tokens = 0;  // tokens as batched, padding included
  double aux_loss_sum = 0;   // mixture of experts: Σ over micro-batches of the load-balancing loss
};

// Calls f(double&) on every summed field, in the buffer's order.
template <typename F>
void for_each_field(StepCounts& c, F&& f) {
  for (MicroBatchCounts& m : c.micro_batches) {
    f(m.targets);
    f(m.correct);
    f(m.entropy_sum);
  }
  f(c.loss_sum);
  f(c.tokens);
  f(c.padded_tokens);
  f(c.aux_loss_sum);
}

// Replaces every field with its sum over the ranks of `comm` (one collective).
void all_reduce_sum(Comm& comm, StepCounts& counts);

}  // namespace sft
