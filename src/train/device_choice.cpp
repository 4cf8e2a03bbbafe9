// The device of a run and its report. See device_choice.h.
#include "train/device_choice.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/error.h"

namespace sft {

namespace {

// Open MPI, MPICH (hydra), then torchrun / accelerate launch: the first one set wins.
constexpr const char* kLocalRankVariables[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                               "LOCAL_RANK"};

std::optional<int> parse_rank(const char* variable, const std::string& value) {
  size_t used = 0;
  int rank = -1;
  try {
    rank = std::stoi(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || rank < 0)
    fail("device", std::string(variable) + "='" + value +
                       "' is not a local rank (hint: a launcher sets it to 0, 1, ...; unset it "
                       "outside one)");
  return rank;
}

std::string gib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
  return text;
}

std::string host_cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0)
      if (const size_t at = line.find_first_not_of(" \t", line.find(':') + 1);
          line.find(':') != std::string::npos && at != std::string::npos)
        return line.substr(at);
  return "unknown model";
}

size_t host_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

}  // namespace

DeviceEnvironment device_environment(const std::function<const char*(const char*)>& lookup) {
  DeviceEnvironment env;
  for (const char* variable : kLocalRankVariables)
    if (const char* v = lookup(variable); v != nullptr && *v != '\0') {
      env.local_rank = parse_rank(variable, v);
      env.local_rank_from = variable;
      break;
    }
  if (const char* v = lookup("CUDA_VISIBLE_DEVICES"); v != nullptr) {
    env.visible_devices_set = true;
    env.visible_devices = v;
  }
  return env;
}

DeviceEnvironment device_environment() {
  DeviceEnvironment env = device_environment([](const char* name) { return std::getenv(name); });
  env.cuda_built = compiled_backends().find("cuda") != std::string::npos;
  env.gpu_count = cuda_device_count();
  return env;
}

DeviceChoice choose_device(const DeviceEnvironment& env, bool use_cpu) {
  DeviceChoice c;
  if (use_cpu) {
    c.why = "--use_cpu";
  } else if (!env.cuda_built) {
    c.why = "this build has no CUDA backend (a -DSFT_CUDA=ON build trains on a visible GPU)";
  } else if (env.gpu_count <= 0) {
    c.why = env.visible_devices_set
                ? "no CUDA device visible (CUDA_VISIBLE_DEVICES='" + env.visible_devices + "')"
                : "no CUDA device visible";
  } else {
    c.device = Device::kCuda;
    c.gpu = env.local_rank ? *env.local_rank % env.gpu_count : 0;
    c.why = env.local_rank ? env.local_rank_from + "=" + std::to_string(*env.local_rank) + " of " +
                                 std::to_string(env.gpu_count) + " visible GPU(s)"
                           : "the first of " + std::to_string(env.gpu_count) + " visible GPU(s)";
  }
  return c;
}

std::vector<std::string> device_report(const DeviceChoice& choice, const DeviceEnvironment& env,
                                       const CudaDeviceInfo& gpu, const std::string& cpu_name,
                                       size_t cpu_memory) {
  if (choice.device == Device::kCpu)
    return {"cpu (" + cpu_name + ", " + gib(cpu_memory) + " memory): " + choice.why};
  std::string line = "cuda:" + std::to_string(choice.gpu) + " (" + gpu.name + ", " +
                     gib(gpu.total_memory) + ", compute capability " + std::to_string(gpu.major) +
                     "." + std::to_string(gpu.minor) + "): " + choice.why;
  if (env.visible_devices_set) line += ", CUDA_VISIBLE_DEVICES='" + env.visible_devices + "'";
  return {line,
          "the training step runs on the GPU: forward, backward, clipping and AdamW, fp32 and "
          "bf16 compute, LoRA and NEFTune, several ranks over NCCL (data and tensor parallel, "
          "ZeRO-1); not there yet: ZeRO-2/3, a 4-bit base (docs/cuda.md)"};
}

std::vector<std::string> device_report(const DeviceChoice& choice, const DeviceEnvironment& env) {
  const CudaDeviceInfo gpu =
      choice.device == Device::kCuda ? cuda_device_info(choice.gpu) : CudaDeviceInfo{};
  return device_report(choice, env, gpu, host_cpu_name(), host_memory());
}

}  // namespace sft
