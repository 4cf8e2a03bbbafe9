// The device choice of `sft train` (train/device_choice.h) on injected environments: the GPU
// count, --use_cpu, the build, the launchers' local-rank variables (GPU = local rank modulo
// the visible count), CUDA_VISIBLE_DEVICES in the report, bad ranks refused naming the
// variable; and the report's lines for each choice.
#include "train/device_choice.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"

namespace sft {
namespace {

DeviceEnvironment env_of(const std::map<std::string, std::string>& vars, bool built = true,
                         int gpus = 0) {
  DeviceEnvironment env = device_environment([&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
  env.cuda_built = built;
  env.gpu_count = gpus;
  return env;
}

TEST(DeviceChoice, AVisibleGpuInACudaBuildUnlessUseCpu) {
  const DeviceChoice gpu = choose_device(env_of({}, true, 2), false);
  EXPECT_EQ(gpu.device, Device::kCuda);
  EXPECT_EQ(gpu.gpu, 0);
  EXPECT_EQ(gpu.why, "the first of 2 visible GPU(s)");
  const DeviceChoice forced = choose_device(env_of({}, true, 2), true);
  EXPECT_EQ(forced.device, Device::kCpu);
  EXPECT_EQ(forced.why, "--use_cpu");
  const DeviceChoice none = choose_device(env_of({}, true, 0), false);
  EXPECT_EQ(none.device, Device::kCpu);
  EXPECT_EQ(none.why, "no CUDA device visible");
  const DeviceChoice hidden = choose_device(env_of({{"CUDA_VISIBLE_DEVICES", ""}}, true, 0), false);
  EXPECT_EQ(hidden.why, "no CUDA device visible (CUDA_VISIBLE_DEVICES='')");
  // A CPU-only build never picks CUDA, whatever the count says.
  const DeviceChoice cpu_build = choose_device(env_of({}, false, 4), false);
  EXPECT_EQ(cpu_build.device, Device::kCpu);
  EXPECT_NE(cpu_build.why.find("no CUDA backend"), std::string::npos) << cpu_build.why;
}

TEST(DeviceChoice, TheLocalRankPicksTheGpuModuloTheCount) {
  for (int rank = 0; rank < 7; ++rank) {
    const DeviceChoice c = choose_device(
        env_of({{"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank)}}, true, 3), false);
    EXPECT_EQ(c.device, Device::kCuda);
    EXPECT_EQ(c.gpu, rank % 3) << rank;
  }
  // Open MPI's variable first, then MPICH's, then torchrun's.
  const DeviceEnvironment both =
      env_of({{"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"LOCAL_RANK", "0"}}, true, 4);
  EXPECT_EQ(both.local_rank, 1);
  EXPECT_EQ(both.local_rank_from, "OMPI_COMM_WORLD_LOCAL_RANK");
  EXPECT_EQ(choose_device(both, false).why, "OMPI_COMM_WORLD_LOCAL_RANK=1 of 4 visible GPU(s)");
  EXPECT_EQ(choose_device(env_of({{"MPI_LOCALRANKID", "5"}}, true, 4), false).gpu, 1);
  EXPECT_EQ(choose_device(env_of({{"LOCAL_RANK", "2"}}, true, 4), false).gpu, 2);
  EXPECT_FALSE(env_of({{"LOCAL_RANK", ""}}).local_rank);  // set but empty: none
}

TEST(DeviceChoice, ABadLocalRankFailsNamingTheVariable) {
  for (const char* bad : {"x", "-1", "1x", "0.5"}) {
    try {
      env_of({{"OMPI_COMM_WORLD_LOCAL_RANK", bad}});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("[device] OMPI_COMM_WORLD_LOCAL_RANK='") + bad +
                    "' is not a local rank (hint: a launcher sets it to 0, 1, ...; unset it "
                    "outside one)");
    }
  }
}

TEST(DeviceChoice, TheReportNamesTheDeviceItsMemoryAndThatTrainingStaysOnTheCpu) {
  const DeviceEnvironment env =
      env_of({{"CUDA_VISIBLE_DEVICES", "2,3"}, {"LOCAL_RANK", "1"}}, true, 2);
  const CudaDeviceInfo h200{"NVIDIA H200", size_t{150} << 30, 9, 0};
  const auto gpu = device_report(choose_device(env, false), env, h200, "host", 0);
  ASSERT_EQ(gpu.size(), 2u);
  EXPECT_EQ(gpu[0],
            "cuda:1 (NVIDIA H200, 150.0 GiB, compute capability 9.0): LOCAL_RANK=1 of 2 visible "
            "GPU(s), CUDA_VISIBLE_DEVICES='2,3'");
  EXPECT_EQ(gpu[1],
            "the training step runs on the GPU: forward, backward, clipping and AdamW, fp32 and "
            "bf16 compute, LoRA and NEFTune, several ranks over NCCL (data and tensor parallel, "
            "ZeRO-1); not there yet: ZeRO-2/3, a 4-bit base (docs/cuda.md)");
  const auto cpu = device_report(choose_device(env, true), env, h200, "Xeon", size_t{3} << 29);
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_EQ(cpu[0], "cpu (Xeon, 1.5 GiB memory): --use_cpu");
}

TEST(DeviceChoice, ThisProcessReportsItsOwnDevice) {
  // Whatever this machine has: the choice agrees with the backend's count, and the report of
  // this process names it (the CPU's model and memory, or the GPU's).
  const DeviceEnvironment env = device_environment();
  EXPECT_EQ(env.gpu_count, cuda_device_count());
  const DeviceChoice c = choose_device(env, false);
  EXPECT_EQ(c.device == Device::kCuda, env.cuda_built && env.gpu_count > 0);
  const auto lines = device_report(c, env);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind(c.device == Device::kCuda ? "cuda:" : "cpu (", 0), 0u) << lines[0];
  const auto forced = device_report(choose_device(env, true), env);
  ASSERT_EQ(forced.size(), 1u);
  EXPECT_EQ(forced[0].rfind("cpu (", 0), 0u);
  EXPECT_NE(forced[0].find(" GiB memory): --use_cpu"), std::string::npos) << forced[0];
}

}  // namespace
}  // namespace sft
