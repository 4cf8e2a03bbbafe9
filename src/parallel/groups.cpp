#include "parallel/groups.h"

#include <string>

#include "core/error.h"

namespace sft {

void CommShardGroup::sum(std::span<float> v) {
  if (on_device(v.data()))
    device_->all_reduce_sum(v.data(), v.size());
  else
    comm_.all_reduce_sum(v);
}

void CommShardGroup::sum(std::span<double> v) {
  if (on_device(v.data()))
    device_->all_reduce_sum(v.data(), v.size());
  else
    comm_.all_reduce_sum(v);
}

void CommShardGroup::gather(std::span<float> v) {
  if (v.size() % static_cast<size_t>(size()) != 0)
    fail("parallel", "gather of " + std::to_string(v.size()) + " elements over " +
                         std::to_string(size()) + " ranks: not an even split");
  // shard_of's blocks are the equal blocks when the split is even
  if (on_device(v.data()))
    device_->all_gather(v.data(), v.size());
  else
    comm_.all_gather(v);
}

ParallelGroups make_parallel_groups(Comm& world, int tp_size, int ep_size) {
  if (tp_size < 1 || world.size() % tp_size != 0)
    fail("parallel", "world size " + std::to_string(world.size()) + " does not divide by tp_size " +
                         std::to_string(tp_size) +
                         " (hint: run a multiple of --tp_size processes)");
  ParallelGroups g;
  const int r = world.rank();
  g.world_rank = r;
  g.tp = world.split(r / tp_size, r % tp_size);
  g.dp = world.split(r % tp_size, r / tp_size);
  if (tp_size > 1) g.tp_group = std::make_unique<CommShardGroup>(*g.tp);
  if (ep_size == 1) return g;
  const int dp_size = g.dp->size(), d = g.dp->rank();
  if (ep_size < 1 || dp_size % ep_size != 0)
    fail("parallel", "data-parallel size " + std::to_string(dp_size) +
                         " does not divide by ep_size " + std::to_string(ep_size) +
                         " (hint: run a multiple of --ep_size processes)");
  g.ep = g.dp->split(d / ep_size, d % ep_size);
  g.expert_dp = g.dp->split(d % ep_size, d / ep_size);
  g.ep_group = std::make_unique<CommExpertGroup>(*g.ep);
  return g;
}

}  // namespace sft
