// The one device check of every view-level op (ops/ops.h): which backend a call goes to.
//
// An op's views are all on one device or the call fails, naming the op and the devices. The CPU
// path pays one comparison per view (no strings unless it fails); CUDA views go to the
// ops::cuda:: kernel of the same name (ops/cuda/cuda_ops.h; in a build without CUDA those say
// how to get them, ops/cuda/without_cuda.cpp). Usage, the first line after the profiler scope:
//   if (on_cuda("rmsnorm_forward", {out, rstd, x, w})) return cuda::rmsnorm_forward(...);
// The same check refuses column blocks (View::columns, rows `stride` apart): only the ops whose
// CPU kernels walk row strides pass Strides::kCpu, and the CUDA kernels take dense views only.
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

// Which views an op's kernels walk with a row stride: none, or those of its CPU kernel.
enum class Strides { kDenseOnly, kCpu };

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
  if (strided && (strides == Strides::kDenseOnly || device != Device::kCpu))
    for (const View& v : views)
      if (!v.empty() && !v.dense()) fail_strided(op, v, device);
  return device;
}

// True when the call's views are CUDA views (the caller then returns the ops::cuda:: call).
inline bool on_cuda(const char* op, std::initializer_list<View> views,
                    Strides strides = Strides::kDenseOnly) {
  return device_of(op, views, strides) == Device::kCuda;
}

// For the ops without a CUDA kernel yet: CUDA views fail naming the op, CPU views pass.
inline void require_cpu_kernel(const char* op, std::initializer_list<View> views) {
  if (on_cuda(op, views))
    fail("ops",
         std::string(op) + ": no CUDA kernel yet (attention, the fused LM head: docs/cuda.md)");
}

}  // namespace sft::ops
