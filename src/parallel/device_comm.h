// Collectives on device memory: NCCL behind the same process group a host Comm spans, so that a
// model on a GPU reduces its gradients and combines its tensor-parallel slices without copying
// them to the host.
//
// Why a type of its own rather than a device path inside Comm: Comm's contract is host memory
// and its own arithmetic (comm.cpp sums in double, in rank order, over an implementation's data
// movement), which NCCL does not keep — NCCL reduces on the GPU, in the element type, in its
// ring/tree order. A DeviceComm is made from a host Comm (`make_device_comm`: rank 0 creates the
// ncclUniqueId and the host Comm broadcasts it, then every rank joins with ncclCommInitRank),
// spans the same ranks in the same order, and keeps the host Comm for what stays on the host
// (counts, statistics, checkpoints). The trainer holds one next to each group of size > 1 when
// the model is on a device (trainer_parallel.cpp); CommShardGroup (groups.h) routes a device
// span to it.
//
// The contract:
//   - Pointers are device memory of the current device (one rank per GPU: device_choice.cpp
//     picks it by local rank); n counts elements. Collectives run in order on the default
//     stream, after the kernels already launched there and before those launched after, so
//     no synchronisation is needed around them (cuda_memory.h: everything is on that stream).
//   - Sums are NCCL's (ncclSum in the element type: f32 in f32, bf16 accumulated by NCCL),
//     not Comm's double sums in rank order: at 2 ranks a sum of two floats rounds the same
//     either way; at more ranks they agree within the float rounding of an n-term sum
//     (tests/cuda/nccl_comm_test.cpp bounds it). NCCL's reductions are deterministic for a fixed
//     world size, topology and count, and nothing here adds atomics: a rerun gives the same bits.
//   - reduce_scatter_sum / all_gather keep shard_of's layout (comm.h; ZeRO-1's): when n divides
//     by size() they are ncclReduceScatter / ncclAllGather in place, otherwise each shard is an
//     ncclReduce / ncclBroadcast to / from its owner, grouped (the balanced shards differ by one
//     element).
//   - One NCCL call per collective, whatever n: NCCL pipelines large arrays itself and needs no
//     scratch of ours (Comm's buckets bound its host scratch).
//   - The started all-reduces (start_all_reduce_sum) run on a non-blocking stream of the
//     communicator's own, ordered after the default stream by an event and before it again by
//     finish_started; every NCCL call of one communicator between those two goes to that
//     stream, so NCCL sees them in the one order every rank issues them.
//   - Calls return once enqueued, so Comm's watchdog and collective_seconds do not see them;
//     a dead peer shows as an NCCL error or a hang at the next copy to the host.
//   - An NCCL error throws "[parallel] nccl... failed (file:line): reason (hint: ...)".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "parallel/comm.h"

namespace sft {

class DeviceComm {
 public:
  virtual ~DeviceComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "nccl".
  virtual std::string kind() const = 0;

  // In place, every rank ends with the sum.
  virtual void all_reduce_sum(float* data, size_t n) = 0;
  virtual void all_reduce_sum(double* data, size_t n) = 0;
  // In place: data[shard_of(n, rank, size)] holds that range's sum over ranks afterwards; the
  // rest of the array is left as it was or holds partial sums (the caller reads its shard only).
  virtual void reduce_scatter_sum(float* data, size_t n) = 0;
  // In place: every rank contributes data[shard_of(n, rank, size)]; afterwards all of data
  // holds every rank's shard. 16-bit elements (bf16 copies) are moved as they are.
  virtual void all_gather(float* data, size_t n) = 0;
  virtual void all_gather(uint16_t* data, size_t n) = 0;
  // Root's n floats on every rank.
  virtual void broadcast(float* data, size_t n, int root) = 0;
  // Backward/communication overlap (data parallel): all_reduce_sum of [data, data + n) enqueued
  // on this communicator's own stream once the work already on the default stream is done (an
  // event), so the reduction runs while later kernels do; the same sums as all_reduce_sum.
  // finish_started makes the default stream wait for every one started (nothing when none was).
  // Between a start and finish_started the range must not be written (the trainer starts a
  // decoder layer's gradients as its backward completes, the rest after the backward).
  virtual void start_all_reduce_sum(float* data, size_t n) = 0;
  virtual void finish_started() = 0;
  // Whether p is device memory (cudaPointerGetAttributes): CommShardGroup asks it, since the
  // model hands its group host arrays (statistics copied down) and device arrays alike.
  virtual bool is_device_memory(const void* p) const = 0;
};

// A DeviceComm over the ranks of `host` (collective: every rank of host calls it). Throws
// "[parallel] ..." in a build without NCCL (a CPU-only build) or when NCCL cannot start.
std::unique_ptr<DeviceComm> make_device_comm(Comm& host);
// Whether this build has NCCL (the CUDA build).
bool nccl_built();

}  // namespace sft
