// Which device `sft train` runs on, as accelerate picks it for TRL's trainer: a CUDA build with
// a visible GPU trains there unless --use_cpu (TrainingArguments.use_cpu) says the CPU;
// otherwise the CPU. CUDA_VISIBLE_DEVICES is the runtime's to apply (it hides devices from
// cuda_device_count()); under a launcher each process takes the GPU of its local rank modulo
// the visible count (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, MPICH's MPI_LOCALRANKID,
// torchrun's LOCAL_RANK), so `mpirun -np N` on an N-GPU node gives one GPU per rank.
//
// The choice is a pure function of the environment it is given (tests inject the GPU count and
// the variables); device_report gives the run's first log lines: the device, its name and
// memory. Choosing selects nothing on the device: `sft train` then calls cuda_init and moves the
// model there (train/device_step.h says what runs on it); the report's second line says so.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "ops/backend.h"

namespace sft {

struct DeviceEnvironment {
  bool cuda_built = false;        // compiled_backends() has cuda
  int gpu_count = 0;              // visible CUDA devices
  std::optional<int> local_rank;  // this process's rank on its node, under a launcher
  std::string local_rank_from;    // the variable it came from
  std::string visible_devices;    // CUDA_VISIBLE_DEVICES as set (for the report), or empty
  bool visible_devices_set = false;
};

struct DeviceChoice {
  Device device = Device::kCpu;
  int gpu = -1;     // the CUDA device index (of the visible ones) when device is kCuda
  std::string why;  // why this device, for the report
};

// The process's environment: lookup reads one variable (std::getenv's contract: null when unset).
// A local rank that is not a non-negative integer fails naming the variable.
DeviceEnvironment device_environment(const std::function<const char*(const char*)>& lookup);
DeviceEnvironment device_environment();  // this process's (std::getenv, cuda_device_count())

DeviceChoice choose_device(const DeviceEnvironment& env, bool use_cpu);

// The first log lines of a run (without a component prefix): the device with its name and
// memory (`gpu`: cuda_device_info of the chosen device; `cpu_name`, `cpu_memory`: the host's),
// and for a CUDA choice the line saying what of the step runs on the GPU.
std::vector<std::string> device_report(const DeviceChoice& choice, const DeviceEnvironment& env,
                                       const CudaDeviceInfo& gpu, const std::string& cpu_name,
                                       size_t cpu_memory);
// The same for this process: the chosen GPU's properties, the host's CPU model and memory.
std::vector<std::string> device_report(const DeviceChoice& choice, const DeviceEnvironment& env);

}  // namespace sft
