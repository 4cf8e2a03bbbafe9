// The process groups of a run: world = tp_size × dp ranks, Megatron's layout (the ranks of
// one tensor-parallel group are adjacent: tp rank = world rank % tp_size, dp rank = world
// rank / tp_size). The trainer reduces gradients and metrics over its data-parallel group;
// the model combines its slices over the tensor-parallel group, which it sees as a
// ShardGroup (core/shard_group.h) served by that group's Comm.
#pragma once

#include <memory>

#include "core/shard_group.h"
#include "parallel/comm.h"

namespace sft {

// A Comm as the model's ShardGroup (the Comm must outlive it).
class CommShardGroup final : public ShardGroup {
 public:
  explicit CommShardGroup(Comm& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void sum(std::span<float> v) override { comm_.all_reduce_sum(v); }
  void sum(std::span<double> v) override { comm_.all_reduce_sum(v); }
  void max(std::span<float> v) override { comm_.all_reduce_max(v); }
  void max(std::span<double> v) override { comm_.all_reduce_max(v); }
  void gather(std::span<float> v) override;

 private:
  Comm& comm_;
};

struct ParallelGroups {
  std::unique_ptr<Comm> dp, tp;
  std::unique_ptr<CommShardGroup> tp_group;  // null when tp_size == 1
  int world_rank = 0;
};

// Throws "[parallel] ..." when the world size does not divide by tp_size.
ParallelGroups make_parallel_groups(Comm& world, int tp_size);

}  // namespace sft
