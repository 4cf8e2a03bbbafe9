// The process groups of a run: world = tp_size × dp ranks, Megatron's layout (the ranks of
// one tensor-parallel group are adjacent: tp rank = world rank % tp_size, dp rank = world
// rank / tp_size). The trainer reduces gradients and metrics over its data-parallel group;
// the model combines its slices over the tensor-parallel group, which it sees as a
// ShardGroup (core/shard_group.h) served by that group's Comm.
#pragma once

#include <memory>

#include "core/expert_group.h"
#include "core/shard_group.h"
#include "parallel/comm.h"
#include "parallel/device_comm.h"

namespace sft {

// A Comm as the model's ShardGroup (the Comm must outlive it). With a model on a device the
// trainer attaches the group's DeviceComm (device_comm.h): a sum or gather of device memory (a
// row-parallel product's output, an activation gradient) then runs on it, in NCCL's sums; host
// arrays (the LM head's and embedding's statistics, copied down by their kernels) and maxima
// stay on the Comm.
class CommShardGroup final : public ShardGroup {
 public:
  explicit CommShardGroup(Comm& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void sum(std::span<float> v) override;
  void sum(std::span<double> v) override;
  void max(std::span<float> v) override { comm_.all_reduce_max(v); }
  void max(std::span<double> v) override { comm_.all_reduce_max(v); }
  void gather(std::span<float> v) override;
  // Null detaches (the DeviceComm must outlive the attachment).
  void attach_device(DeviceComm* device) { device_ = device; }

 private:
  bool on_device(const void* p) const { return device_ && device_->is_device_memory(p); }
  Comm& comm_;
  DeviceComm* device_ = nullptr;
};

// A Comm as the model's ExpertGroup (the Comm must outlive it).
class CommExpertGroup final : public ExpertGroup {
 public:
  explicit CommExpertGroup(Comm& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void all_to_all(const void* send, std::span<const size_t> send_counts, void* recv,
                  std::span<const size_t> recv_counts, size_t elem_size) override {
    comm_.all_to_all(send, send_counts, recv, recv_counts, elem_size);
  }

 private:
  Comm& comm_;
};

// Expert parallelism splits the data-parallel group into groups of ep_size adjacent DP ranks
// (ep: ep rank = dp rank % ep_size), each owning a share of the experts; the DP ranks with the
// same ep rank form the expert-data-parallel group (expert_dp), over which the owned experts'
// gradients are summed. Without expert parallelism all three are null.
struct ParallelGroups {
  std::unique_ptr<Comm> dp, tp;
  std::unique_ptr<CommShardGroup> tp_group;  // null when tp_size == 1
  std::unique_ptr<Comm> ep, expert_dp;       // null when ep_size == 1
  std::unique_ptr<CommExpertGroup> ep_group;
  int world_rank = 0;
};

// Throws "[parallel] ..." when the world size does not divide by tp_size, or the
// data-parallel size by ep_size.
ParallelGroups make_parallel_groups(Comm& world, int tp_size, int ep_size = 1);

}  // namespace sft
