// The one device check of every view-level op (ops/ops.h): which backend's kernel table
// (ops/kernel_table.h) a call goes to; ops/dispatch.cpp calls it first for every op.
//
// An op's views are all on one device or the call fails, naming the op and the devices. It costs
// one comparison per view (no strings unless it fails).
// The same check refuses column blocks (View::columns, rows `stride` apart) for the ops whose
// kernels walk dense rows only; the ops whose kernels walk row strides on every backend (matmul,
// cast, rope; the CPU's 4-bit matmul) pass Strides::kRowStrides.
#pragma once

#include <initializer_list>
#include <string>

#include "core/device.h"
#include "core/error.h"
#include "ops/view.h"

namespace sft::ops {

[[noreturn]] inline void fail_mixed_devices(const char* op, Device a, Device b) {
  fail("ops", std::string(op) + ": views on different devices (" + device_name(a) + " and " +
                  device_name(b) + "; hint: copy them to one device with ops/cuda/cuda_memory.h)");
}

// Whether an op's kernels (CPU and CUDA alike) walk its views with their row strides.
enum class Strides { kDenseOnly, kRowStrides };

[[noreturn]] inline void fail_strided(const char* op, const View& v, Device device) {
  fail("ops", std::string(op) + ": a column block (" + std::to_string(v.rows) + " rows of " +
                  std::to_string(v.cols) + ", row stride " + std::to_string(v.ld()) + ") on " +
                  device_name(device) + ", where this op takes dense views only (hint: copy the " +
                  "block into a dense view with ops::cast first)");
}

// The device of the call's non-empty views (the CPU when all are empty); fails on a mix, and
// on a strided view where `strides` does not allow it.
inline Device device_of(const char* op, std::initializer_list<View> views,
                        Strides strides = Strides::kDenseOnly) {
  Device device = Device::kCpu;
  bool seen = false, strided = false;
  for (const View& v : views) {
    if (v.empty()) continue;
    if (!seen) {
      device = v.device;
      seen = true;
    } else if (v.device != device) {
      fail_mixed_devices(op, device, v.device);
    }
    strided = strided || !v.dense();
  }
  if (strided && strides == Strides::kDenseOnly)
    for (const View& v : views)
      if (!v.empty() && !v.dense()) fail_strided(op, v, device);
  return device;
}

}  // namespace sft::ops
