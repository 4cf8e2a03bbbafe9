// The CUDA build's backend entry points, and the view checks that run before any CUDA call
// (these tests run everywhere, with or without a device).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "cuda_test_support.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_ops.h"
#include "train/device_choice.h"

namespace sft {
namespace {

using ops::View;

std::string message_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(CudaBackend, ReportsBothBackends) {
  EXPECT_EQ(compiled_backends(), "cpu, cuda");
}

TEST(CudaBackend, InitOfAMissingDeviceSaysHowMany) {
  const std::string m = message_of([] { cuda_init(1 << 20); });
  EXPECT_EQ(m.rfind("[cuda] ", 0), 0u) << m;
  // Without a driver the checked call names itself and where it failed; otherwise the count.
  const bool named = m.find("cudaGetDeviceCount(&count) failed at ") != std::string::npos;
  const bool counted = m.find("does not exist") != std::string::npos;
  EXPECT_TRUE(cuda_available() ? counted : named || counted) << m;
}

TEST(CudaBackend, InitSelectsTheFirstDevice) {
  SFT_SKIP_WITHOUT_CUDA();
  EXPECT_NO_THROW(cuda_init(0));
}

// The device a run picks (train/device_choice.h) as this process sees it: the GPU's name and
// memory from cudaGetDeviceProperties in the report (in tests/cuda/emulation, the emulated
// device: "sft CPU emulation of a CUDA device", 1 GiB), and the line that training stays on the
// CPU for now; --use_cpu still gives the CPU.
TEST(CudaBackend, TheRunsDeviceIsTheVisibleGpu) {
  SFT_SKIP_WITHOUT_CUDA();
  const int count = cuda_device_count();
  ASSERT_GE(count, 1);
  const CudaDeviceInfo info = cuda_device_info(0);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(info.total_memory, size_t{0});
  EXPECT_GE(info.major, 1);
  const std::string missing = message_of([&] { cuda_device_info(count); });
  EXPECT_NE(missing.find("does not exist"), std::string::npos) << missing;
  const DeviceEnvironment env = device_environment();
  EXPECT_TRUE(env.cuda_built);
  const DeviceChoice c = choose_device(env, false);
  ASSERT_EQ(c.device, Device::kCuda);
  EXPECT_GE(c.gpu, 0);
  EXPECT_LT(c.gpu, count);
  const std::vector<std::string> lines = device_report(c, env);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind(
                "cuda:" + std::to_string(c.gpu) + " (" + cuda_device_info(c.gpu).name + ", ", 0),
            0u)
      << lines[0];
  EXPECT_EQ(lines[1].rfind("the training step runs on the GPU", 0), 0u) << lines[1];
  EXPECT_EQ(choose_device(env, true).device, Device::kCpu);
}

TEST(CudaBackend, CpuViewsAreRefusedBeforeAnyLaunch) {
  float x[4] = {}, w[2] = {}, r[2] = {};
  const View xv = ops::view_of(x, 2, 2), wv = ops::view_of(w, 1, 2), rv = ops::view_of(r, 2, 1);
  const std::string m = message_of([&] { ops::cuda::rmsnorm_forward(xv, rv, xv, wv, 1e-6); });
  EXPECT_EQ(m,
            "[ops] rmsnorm: a cpu view reached the CUDA kernels (copy it with "
            "ops/cuda/cuda_memory.h)");
}

TEST(CudaBackend, ShapesAndDtypesAreCheckedBeforeAnyLaunch) {
  // Fake device pointers: the checks must fail before anything dereferences them.
  auto fake = [](DType dt, int64_t r, int64_t c) {
    return View{reinterpret_cast<void*>(uintptr_t{4096}), dt, r, c, Device::kCuda};
  };
  EXPECT_NE(message_of([&] {
              ops::cuda::matmul(fake(DType::kF32, 2, 3), fake(DType::kF32, 2, 4),
                                fake(DType::kF32, 5, 3), false, false, false);
            }).find("do not fit"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              ops::cuda::matmul(fake(DType::kF32, 2, 3), fake(DType::kBF16, 2, 4),
                                fake(DType::kF32, 4, 3), false, false, false);
            }).find("f32 × f32 or bf16 × bf16"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              ops::cuda::cast(fake(DType::kF64, 1, 4), fake(DType::kF32, 1, 4));
            }).find("no CUDA kernel from F32 to F64"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              ops::cuda::rmsnorm_forward(fake(DType::kF64, 2, 2), fake(DType::kF64, 2, 1),
                                         fake(DType::kF64, 2, 2), fake(DType::kF64, 1, 2), 1e-6);
            }).find("takes F32 here, got F64"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              ops::cuda::adamw_update(fake(DType::kF32, 1, 4), fake(DType::kF32, 1, 3),
                                      fake(DType::kF32, 1, 4), fake(DType::kF32, 1, 4), {});
            }).find("needs CUDA f32 views of 4 elements"),
            std::string::npos);
}

TEST(CudaBackend, CopiesCheckDevicesAndShapes) {
  float host[4] = {};
  const View h = ops::view_of(host, 2, 2);
  EXPECT_NE(message_of([&] { ops::cuda::upload(h, h); })
                .find("upload: copies a cpu view to a "
                      "cuda view, got cpu → cpu"),
            std::string::npos);
  const View d{reinterpret_cast<void*>(uintptr_t{4096}), DType::kF32, 1, 3, Device::kCuda};
  EXPECT_NE(message_of([&] { ops::cuda::download(h, d); }).find("views differ"), std::string::npos);
}

}  // namespace
}  // namespace sft
