// ZeRO-1 (DeepSpeed stage 1) over the data-parallel ranks: each rank keeps the Adam moments
// of its own shard of the flat parameter arena only (shard_of in parallel/comm.h), so optimizer
// memory per rank is 8 bytes × P / dp instead of 8 bytes × P.
//
// Per optimizer step, instead of all-reducing the gradients:
//   reduce_scatter   the local gradient sums → this rank's shard holds the global sum;
//   grad_norm        Σ g² of the own shard, summed over ranks in rank order (f64);
//   step             AdamW (torch's element update, optim/adamw.h) on the own shard, with
//                    torch's clip_grad_norm_ coefficient applied as it reads the gradients;
//   all_gather       the updated fp32 weights (and their bf16 copies) to every rank.
// The fp32 weights stay whole on every rank: the forward reads them in fp32 compute, so
// only the moments are sharded here. Checkpoints hold the whole moments, gathered a tensor at
// a time as they are written (optim/zero_stream.h; gather_into assembles them whole, for tensor
// parallelism) and read back as each rank's shard (load_from: from a whole optimizer): the file
// is the same as without ZeRO and can be resumed with any dp size.
//
// On a device (the model's arenas there): the moments of the shard live on the device too and
// the reduce-scatter and gathers run on `device_dp`, the NCCL communicator over dp's ranks
// (parallel/device_comm.h: NCCL's sums); the norm's one double still goes over dp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/param_slice.h"
#include "optim/adamw.h"
#include "parallel/comm.h"
#include "parallel/device_comm.h"

namespace sft {

class Zero1 {
 public:
  Zero1(size_t num_params, AdamWOptions options, Comm& dp, Device device = Device::kCpu,
        DeviceComm* device_dp = nullptr);

  // grads: this rank's local gradient sums (full size). Reduce-scatters them and returns the
  // global L2 norm; only the own shard of grads is meaningful afterwards.
  double reduce_gradients(std::span<float> grads);
  // Only the reduce-scatter of reduce_gradients (for a caller that computes the norm itself,
  // e.g. over tensor-parallel slices).
  void reduce_scatter(std::span<float> grads);
  // The global L2 norm of gradients already reduce-scattered (ZeRO-2 reduces them per
  // micro-batch, optim/zero2.h): Σ g² of the own shard, summed over ranks in rank order.
  double shard_grad_norm(std::span<const float> grads);
  // AdamW on the own shard (each gradient times grad_scale, the clip coefficient of
  // optim/clip.h), then every rank gets the whole updated weights (and bf16 copies), unless
  // !gather_weights (ZeRO-3 gathers a layer's weights when it is used: optim/zero3.h).
  void step(std::span<float> params, std::span<const float> grads,
            std::span<const ParamSlice> slices, double lr, uint16_t* bf16_copies,
            float grad_scale = 1.0f, bool gather_weights = true);

  ShardRange shard() const { return shard_; }
  size_t num_params() const { return num_params_; }
  AdamW& shard_optimizer() { return shard_adam_; }
  const AdamW& shard_optimizer() const { return shard_adam_; }
  // Bytes of optimizer state on this rank (the two moments of the own shard).
  int64_t state_bytes() const;
  // Checkpoints: every rank ends with the whole moments in `full`; load_from takes the own
  // shard of a whole-size optimizer (any dp size wrote it).
  void gather_into(AdamW& full);
  void load_from(AdamW& full);

 private:
  Comm& dp_;
  Device device_;
  DeviceComm* device_dp_;  // non-null on a device with several ranks
  size_t num_params_;
  ShardRange shard_;
  AdamW shard_adam_;
};

// The slices of `slices` inside [shard.begin, shard.end), with offsets relative to it.
std::vector<ParamSlice> slices_in_shard(std::span<const ParamSlice> slices, ShardRange shard);

}  // namespace sft
