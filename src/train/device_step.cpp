// The trainer on a device: its refusals, the gradient norm there and the host copies of a
// checkpoint. See device_step.h.
#include "train/device_step.h"

#include <string>

#include "core/error.h"
#include "optim/clip.h"
#include "train/trainer.h"

namespace sft {

namespace {

[[noreturn]] void not_on_device(Device device, const std::string& what) {
  fail("train", what + " is not on the " +
                    (device == Device::kCuda ? "CUDA" : device_name(device)) +
                    " device yet (hint: --use_cpu)");
}

}  // namespace

void check_device_training(const TrainingArgs& args, const model::Transformer& model,
                           const Comm& /*dp*/, const Comm* /*tp*/) {
  const Device device = model.trainable().device();
  if (device == Device::kCpu) return;
  // Several data-parallel ranks and tensor parallelism reduce on the device over NCCL
  // (parallel/device_comm.h; a build without it says so when the trainer makes its
  // communicators).
  // ZeRO-1 keeps its moments' shard on the device (optim/zero1.h); stages 2 and 3 shard host
  // memory (optim/zero_memory.h).
  // A mixture of experts under tensor parallelism runs on the host only so far: its device
  // path is unverified (the emulation covers each alone).
  if (model.tensor_parallel().on() && model.config().has_experts())
    not_on_device(device, "a mixture of experts with --tp_size " +
                              std::to_string(model.tensor_parallel().size));
  if (args.zero_stage >= 2)
    not_on_device(
        device, "--zero_stage " + std::to_string(args.zero_stage) + " (ZeRO-1 is: --zero_stage 1)");
}

Trainer::GradNorm Trainer::device_grad_norm() {
  const std::span<float> grads = model_.trainable().grads();
  const double norm = global_grad_norm(grads, model_.trainable().device());
  return {norm, clip_coefficient(norm, args_.max_grad_norm)};
}

model::Transformer host_copy(const model::Transformer& model) {
  model::Transformer host = model::Transformer::zeros(model.config(), model.tensor_parallel());
  const model::LoraModel* lora = model.lora();
  if (!lora) {
    host.params().copy_values_from(model.params());
    return host;
  }
  // With LoRA a checkpoint holds the adapters alone (the frozen base is not in it, and under
  // bf16 its fp32 matrices are gone): the host model gets adapters of the same configuration
  // (their init draws are overwritten) and the trained values.
  host.enable_lora(lora->config(), 0, "the checkpoint's adapters");
  host.lora()->params().copy_values_from(lora->params());
  return host;
}

}  // namespace sft
