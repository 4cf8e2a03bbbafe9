// The optimizer step on the CUDA device as the trainer runs it (train/device_step.h): a model's
// ParameterSet arenas on the device (fp32 master, gradients, bf16 copies), AdamW with its moments
// in a device arena, the global gradient norm and the clip coefficient folded into the update.
// A few steps from the same gradients give the CPU's bits: the norm (the CPU's summation order),
// the weights, both moments and the bf16 copies. The host copy a checkpoint writes and the
// upload of a resume round-trip those bits.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/arena.h"
#include "core/rng.h"
#include "cuda_test_support.h"
#include "model/transformer.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "test_paths.h"

namespace sft {
namespace {

template <typename T>
std::vector<T> host_bytes(const void* data, Device device, size_t n) {
  std::vector<T> out(n);
  copy_bytes(out.data(), Device::kCpu, data, device, n * sizeof(T));
  return out;
}

template <typename T>
bool same(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Both moments of an optimizer on either device, read on the host.
std::vector<float> moments(const AdamW& opt) {
  const AdamW host = opt.copy_to(Device::kCpu);
  std::vector<float> out(host.exp_avg().values<float>().begin(),
                         host.exp_avg().values<float>().end());
  out.insert(out.end(), host.exp_avg_sq().values<float>().begin(),
             host.exp_avg_sq().values<float>().end());
  return out;
}

TEST(CudaOptimizerStep, StepsOnTheDeviceGiveTheCpuBits) {
  SFT_SKIP_WITHOUT_CUDA();
  const std::string dir = test::source_path("tests/fixtures/parity/llama_gqa_tied_llama3");
  model::Transformer cpu = model::Transformer::load(dir), gpu = model::Transformer::load(dir);
  gpu.to_device(Device::kCuda);
  // bf16 compute: the update also rounds the new weights into the bf16 copies.
  cpu.set_compute_dtype(DType::kBF16);
  gpu.set_compute_dtype(DType::kBF16);
  cpu.zero_grad();
  gpu.zero_grad();
  model::ParameterSet &pc = cpu.trainable(), &pg = gpu.trainable();
  ASSERT_EQ(pg.device(), Device::kCuda);
  ASSERT_EQ(pg.all()[0].grad.device, Device::kCuda);
  const size_t n = static_cast<size_t>(pc.numel());
  AdamWOptions ao;
  ao.weight_decay = 0.01;
  AdamW oc(n, ao), og(n, ao, Device::kCuda);
  EXPECT_EQ(og.device(), Device::kCuda);
  cuda_test::expect_error("copy_to(Device::kCpu)", [&] { (void)og.exp_avg(); });
  const std::vector<ParamSlice> slices = pc.decay_slices();
  // Steps 1 and 2 clip (a norm of ~ sqrt(n) against max_norm 1), step 3 does not.
  const double max_norm[] = {1.0, 1.0, 1e30};
  for (int step = 0; step < 3; ++step) {
    std::vector<float> g(n);
    Rng rng(27, static_cast<uint64_t>(step));
    for (float& x : g) x = rng.normal() * 0.5f;
    std::memcpy(pc.grads().data(), g.data(), n * sizeof(float));
    copy_bytes(pg.grads().data(), Device::kCuda, g.data(), Device::kCpu, n * sizeof(float));
    const double nc = global_grad_norm(pc.grads()),
                 ng = global_grad_norm(pg.grads(), Device::kCuda);
    EXPECT_EQ(std::memcmp(&nc, &ng, sizeof(double)), 0)
        << "grad norm, step " << step + 1 << ": " << ng << " vs " << nc;
    const float cc = clip_coefficient(nc, max_norm[step]),
                cg = clip_coefficient(ng, max_norm[step]);
    if (step < 2) EXPECT_LT(cc, 1.0f) << "the test must clip";
    const double lr = 1e-3 * (1.0 - 0.1 * step);
    oc.step(pc.values(), pc.grads(), slices, lr, pc.bf16_arena(), cc);
    og.step(pg.values(), pg.grads(), slices, lr, pg.bf16_arena(), cg);
    SCOPED_TRACE("step " + std::to_string(step + 1));
    EXPECT_TRUE(same(host_bytes<float>(pg.values().data(), Device::kCuda, n),
                     host_bytes<float>(pc.values().data(), Device::kCpu, n)))
        << "weights";
    EXPECT_TRUE(same(host_bytes<uint16_t>(pg.bf16_arena(), Device::kCuda, n),
                     host_bytes<uint16_t>(pc.bf16_arena(), Device::kCpu, n)))
        << "bf16 copies";
    EXPECT_TRUE(same(moments(og), moments(oc))) << "moments";
  }
  EXPECT_EQ(og.steps_taken(), 3);

  // A checkpoint's host copy and a resume's upload keep every bit and the step count.
  const AdamW host = og.copy_to(Device::kCpu);
  AdamW again(n, ao, Device::kCuda);
  again.copy_state_from(host);
  EXPECT_EQ(again.steps_taken(), 3);
  EXPECT_TRUE(same(moments(again), moments(oc)));
  AdamW wrong(n + 1, ao, Device::kCuda);
  cuda_test::expect_error("loaded into an optimizer of", [&] { wrong.copy_state_from(host); });

  // Back on the host (the export): the weights come along; the gradients restart at zero.
  gpu.to_device(Device::kCpu);
  EXPECT_EQ(gpu.params().device(), Device::kCpu);
  EXPECT_TRUE(same(host_bytes<float>(gpu.params().values().data(), Device::kCpu, n),
                   host_bytes<float>(pc.values().data(), Device::kCpu, n)));
  // The bf16 copies remade there from the moved weights: the matrices' (AdamW also rounds the
  // norms into their unused slots of the arena, which enable_bf16_copies does not).
  for (const model::Parameter& p : gpu.params().all()) {
    if (p.bf16.empty()) continue;
    const size_t k = static_cast<size_t>(p.bf16.numel()), at = static_cast<size_t>(p.offset);
    EXPECT_EQ(std::memcmp(gpu.params().bf16_arena() + at, pc.bf16_arena() + at, k * 2), 0)
        << p.spec.name;
  }
  for (float x : gpu.params().grads()) ASSERT_EQ(x, 0.0f);
}

}  // namespace
}  // namespace sft
