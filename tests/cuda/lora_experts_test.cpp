// LoRA on the experts' stacks (model/expert_lora.h, PEFT's target_parameters) on the CUDA
// device: with PEFT's non-zero adapter of tests/fixtures/lora_experts/<fixture> (q_proj and
// v_proj adapted beside), the device's logits, loss and every adapter gradient equal the CPU
// fp32 step's within 1e-5 relative (issue 27's bar, as moe_model_test.cpp); in bf16 the CPU's
// bf16 step within per-fixture bounds about twice the measured, for model_test.cpp's reason
// (the two devices round fp32 values summed in other orders to bf16, so a value near a rounding
// boundary lands one bf16 ulp apart now and then; in a mixture of experts that can also move a
// token's top-k choice: qwen3_moe's fixture has one such token, gpt-oss's none). A repeated step
// allocates nothing and gives the same bits. On the emulation
// (tests/cuda/emulation/run.sh) this checks that W + delta, the identity transposes of B and the
// adapters' gradients run on device memory.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "model/lora.h"
#include "model/transformer.h"
#include "ops/cuda/cuda_memory.h"
#include "test_paths.h"

namespace sft::model {
namespace {

using cuda_test::relative_error;
using cuda_test::Values;

struct Step {
  Values logits;
  double loss = 0;
  std::vector<std::pair<std::string, Values>> grads;
};

Step run_step(Transformer& model, const Batch& batch) {
  std::vector<float> logits(batch.tokens.size() * static_cast<size_t>(model.config().vocab_size));
  const LossStats stats = model.forward(batch, logits.data());
  model.zero_grad();
  model.backward(1.0 / static_cast<double>(stats.count));
  Step r;
  r.logits.assign(logits.begin(), logits.end());
  r.loss = stats.loss_sum / static_cast<double>(stats.count);
  for (const Parameter& p : model.trainable().all()) {
    std::vector<float> g(static_cast<size_t>(p.grad.numel()));
    copy_bytes(g.data(), Device::kCpu, p.grad.data, p.grad.device, g.size() * sizeof(float));
    r.grads.push_back({p.spec.name, Values(g.begin(), g.end())});
  }
  return r;
}

// The fixture with PEFT's adapter (values set on the host, then moved), in `compute`.
Transformer adapted(const std::string& name, Device device, DType compute) {
  const std::string golden = test::source_path("tests/fixtures/lora_experts/" + name);
  Transformer m = Transformer::load(test::source_path("tests/fixtures/parity/" + name));
  LoraConfig c;
  c.r = 4;
  c.alpha = 8;
  c.dropout = 0;
  c.target_modules = {"q_proj", "v_proj"};
  c.target_parameters = read_json_file(golden + "/adapter/adapter_config.json", "test")
                            .at("target_parameters")
                            .get<std::vector<std::string>>();
  m.enable_lora(c, 11, "test");
  const SafetensorsFile f = SafetensorsFile::open(golden + "/adapter/adapter_model.safetensors");
  for (const Parameter& p : m.trainable().all()) {
    const std::vector<float> v = f.tensor(p.spec.name).to_f32_vector();
    std::memcpy(p.value.data, v.data(), v.size() * sizeof(float));
  }
  if (device != Device::kCpu) m.to_device(device);
  m.set_compute_dtype(compute);
  return m;
}

// bf16's bounds (fp32: 1e-5 for all three). Measured on the emulation: qwen3_moe logits 3.3e-3,
// loss 2.6e-4, gradients 9.0e-3; gpt-oss 1.4e-7, 2.8e-8, 2.0e-6.
struct Bf16Bounds {
  const char* fixture;
  double logits, loss, grads;
};

class CudaLoraExperts : public ::testing::TestWithParam<Bf16Bounds> {};

TEST_P(CudaLoraExperts, StepOnTheDeviceEqualsTheCpuStep) {
  SFT_SKIP_WITHOUT_CUDA();
  const Bf16Bounds bf16 = GetParam();
  const std::string name = bf16.fixture;
  const SafetensorsFile expected = SafetensorsFile::open(
      test::source_path("tests/fixtures/parity/" + name) + "/expected.safetensors");
  auto ids = [&](const char* key) {
    const auto v = expected.tensor(key).values<int64_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  };
  const Batch batch{ids("input_ids"), ids("labels"), ids("doc_lengths")};
  for (DType compute : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(compute));
    Transformer cpu = adapted(name, Device::kCpu, compute);
    Transformer gpu = adapted(name, Device::kCuda, compute);
    const bool f32 = compute == DType::kF32;
    const Step ref = run_step(cpu, batch), got = run_step(gpu, batch);
    EXPECT_LE(relative_error(got.logits, ref.logits), f32 ? 1e-5 : bf16.logits) << "logits";
    EXPECT_LE(std::abs(got.loss - ref.loss), (f32 ? 1e-5 : bf16.loss) * std::abs(ref.loss));
    ASSERT_EQ(got.grads.size(), ref.grads.size());
    double worst = 0;
    int experts = 0;
    for (size_t i = 0; i < ref.grads.size(); ++i) {
      const double err = relative_error(got.grads[i].second, ref.grads[i].second);
      EXPECT_LE(err, f32 ? 1e-5 : bf16.grads) << ref.grads[i].first;
      worst = std::max(worst, err);
      experts += ref.grads[i].first.find("experts") != std::string::npos;
    }
    EXPECT_EQ(experts, 8);
    std::printf("[cuda lora experts] %s %s: logits %.3g, loss %.3g, worst adapter gradient %.3g\n",
                name.c_str(), std::string(dtype_name(compute)).c_str(),
                relative_error(got.logits, ref.logits), std::abs(got.loss - ref.loss), worst);

    const int64_t before = ops::cuda::device_allocations();
    const Step again = run_step(gpu, batch);
    EXPECT_EQ(ops::cuda::device_allocations(), before) << "cudaMalloc in a repeated step";
    EXPECT_TRUE(cuda_test::same_bits(again.logits, got.logits));
    for (size_t i = 0; i < got.grads.size(); ++i)
      EXPECT_TRUE(cuda_test::same_bits(again.grads[i].second, got.grads[i].second))
          << got.grads[i].first;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaLoraExperts,
                         ::testing::Values(Bf16Bounds{"qwen3_moe_topk_norm", 7e-3, 6e-4, 2e-2},
                                           Bf16Bounds{"gpt_oss_experts_sinks", 1e-6, 1e-7, 5e-6}),
                         [](const ::testing::TestParamInfo<Bf16Bounds>& info) {
                           return std::string(info.param.fixture);
                         });

}  // namespace
}  // namespace sft::model
