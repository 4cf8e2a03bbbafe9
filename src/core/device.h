// Where a tensor's memory lives. The CPU is always there; CUDA memory exists only in builds
// with -DSFT_CUDA=ON (ops/backend.h says whether a device is present).
#pragma once

#include <cstdint>

namespace sft {

enum class Device : uint8_t { kCpu, kCuda };

inline const char* device_name(Device d) {
  return d == Device::kCpu ? "cpu" : "cuda";
}

}  // namespace sft
