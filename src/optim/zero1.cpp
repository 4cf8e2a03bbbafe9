#include "optim/zero1.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "ops/ops.h"

namespace sft {

std::vector<ParamSlice> slices_in_shard(std::span<const ParamSlice> slices, ShardRange shard) {
  std::vector<ParamSlice> out;
  for (const ParamSlice& s : slices) {
    const size_t b = std::max(s.offset, shard.begin), e = std::min(s.offset + s.size, shard.end);
    if (b < e) out.push_back({b - shard.begin, e - b, s.decay});
  }
  return out;
}

Zero1::Zero1(size_t num_params, AdamWOptions options, Comm& dp, Device device,
             DeviceComm* device_dp)
    : dp_(dp),
      device_(device),
      device_dp_(device_dp),
      num_params_(num_params),
      shard_(dp.my_shard(num_params)),
      shard_adam_(shard_.size(), options, device) {
  if (device != Device::kCpu && dp.size() > 1 && !device_dp)
    fail("optim", "ZeRO-1 on a device over " + std::to_string(dp.size()) +
                      " ranks needs their device communicator (parallel/device_comm.h)");
}

int64_t Zero1::state_bytes() const {
  return static_cast<int64_t>(2 * shard_.size() * sizeof(float));
}

void Zero1::reduce_scatter(std::span<float> grads) {
  if (grads.size() != num_params_)
    fail("optim", "ZeRO-1 was built for " + std::to_string(num_params_) + " parameters, given " +
                      std::to_string(grads.size()) + " grads");
  if (device_dp_)
    device_dp_->reduce_scatter_sum(grads.data(), grads.size());
  else
    dp_.reduce_scatter_sum(grads);
}

double Zero1::reduce_gradients(std::span<float> grads) {
  reduce_scatter(grads);
  return shard_grad_norm(grads);
}

double Zero1::shard_grad_norm(std::span<const float> grads) {
  const int64_t n = static_cast<int64_t>(shard_.size());
  std::vector<double> sq = {
      n > 0 ? ops::sum_of_squares(ops::view_of(grads.data() + shard_.begin, 1, n, device_)) : 0.0};
  dp_.all_reduce_sum(std::span<double>(sq));
  return std::sqrt(sq[0]);
}

void Zero1::step(std::span<float> params, std::span<const float> grads,
                 std::span<const ParamSlice> slices, double lr, uint16_t* bf16_copies,
                 float grad_scale, bool gather_weights) {
  const std::vector<ParamSlice> own = slices_in_shard(slices, shard_);
  shard_adam_.step(params.subspan(shard_.begin, shard_.size()),
                   grads.subspan(shard_.begin, shard_.size()), own, lr,
                   bf16_copies ? bf16_copies + shard_.begin : nullptr, grad_scale);
  if (!gather_weights) return;
  if (device_dp_) {
    device_dp_->all_gather(params.data(), params.size());
    if (bf16_copies) device_dp_->all_gather(bf16_copies, num_params_);
    return;
  }
  dp_.all_gather(params);
  if (bf16_copies) dp_.all_gather(std::span<uint16_t>(bf16_copies, num_params_));
}

void Zero1::gather_into(AdamW& full) {
  std::span<float> m = full.exp_avg().mutable_values<float>();
  std::span<float> v = full.exp_avg_sq().mutable_values<float>();
  if (m.size() != num_params_)
    fail("optim", "ZeRO-1 gather into an optimizer of " + std::to_string(m.size()) +
                      " parameters, expected " + std::to_string(num_params_));
  const size_t bytes = shard_.size() * sizeof(float);
  // A device shard is read through a host copy of it (the moments are the host's only).
  std::optional<AdamW> host;
  if (device_ != Device::kCpu) host.emplace(shard_adam_.copy_to(Device::kCpu));
  const AdamW& own = host ? *host : shard_adam_;
  if (bytes) {
    std::memcpy(m.data() + shard_.begin, own.exp_avg().values<float>().data(), bytes);
    std::memcpy(v.data() + shard_.begin, own.exp_avg_sq().values<float>().data(), bytes);
  }
  dp_.all_gather(m);
  dp_.all_gather(v);
  full.set_steps_taken(shard_adam_.steps_taken());
}

void Zero1::load_from(AdamW& full) {
  std::span<const float> m = full.exp_avg().values<float>();
  std::span<const float> v = full.exp_avg_sq().values<float>();
  if (m.size() != num_params_)
    fail("optim", "ZeRO-1 load from an optimizer of " + std::to_string(m.size()) +
                      " parameters, expected " + std::to_string(num_params_));
  const size_t bytes = shard_.size() * sizeof(float);
  // On a device the shard is assembled on the host, then uploaded.
  std::optional<AdamW> host;
  if (device_ != Device::kCpu) host.emplace(shard_.size(), shard_adam_.options());
  AdamW& own = host ? *host : shard_adam_;
  if (bytes) {
    std::memcpy(own.exp_avg().mutable_values<float>().data(), m.data() + shard_.begin, bytes);
    std::memcpy(own.exp_avg_sq().mutable_values<float>().data(), v.data() + shard_.begin, bytes);
  }
  own.set_steps_taken(full.steps_taken());
  if (host) shard_adam_.copy_state_from(*host);
}

}  // namespace sft
