// all_reduce_sum of StepCounts: see step_counts.h.
#include "train/step_counts.h"

#include <span>

namespace sft {

void all_reduce_sum(Comm& comm, StepCounts& counts) {
  std::vector<double> buffer;
  for_each_field(counts, [&](double& v) { buffer.push_back(v); });
  comm.all_reduce_sum(std::span<double>(buffer));
  auto sum = buffer.begin();
  for_each_field(counts, [&](double& v) { v = *sum++; });
}

}  // namespace sft
