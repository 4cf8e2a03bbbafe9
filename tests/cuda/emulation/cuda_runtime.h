// A CPU stand-in for the parts of the CUDA runtime and device language that src/ops/cuda uses,
// so that tests/cuda/emulation/run.sh can run the kernels' own code on the CPU (no GPU here).
// Device memory is host memory; a launch runs the grid's blocks one after another and, for
// kernels that synchronize, the block's threads as fibers that meet at each __syncthreads
// (so __shared__ arrays, declared static here, are shared by one block at a time). It checks
// the kernels' index arithmetic, reduction orders and host wrappers, not GPU-only behaviour
// (memory model, warp scheduling, nvcc's code generation). Only the emulation includes this.
#pragma once

#include <setjmp.h>
#include <ucontext.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

using cudaError_t = int;
inline constexpr cudaError_t cudaSuccess = 0;
inline constexpr cudaError_t cudaErrorMemoryAllocation = 2;
inline constexpr cudaError_t cudaErrorInsufficientDriver = 35;
inline constexpr cudaError_t cudaErrorNoDevice = 100;
inline constexpr cudaError_t cudaErrorInvalidDevice = 101;
using cudaStream_t = void*;
enum cudaMemcpyKind {
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault
};

inline const char* cudaGetErrorString(cudaError_t) {
  return "emulated failure";
}
inline const char* cudaGetErrorName(cudaError_t) {
  return "cudaErrorEmulated";
}
inline cudaError_t cudaGetLastError() {
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int) {
  return cudaSuccess;
}
// What cudaPointerGetAttributes reports. Emulated device memory is host memory, so the
// allocations are recorded (start → end, kind) and a pointer is "device memory" when it lies in
// one of cudaMalloc's: the emulated NCCL (nccl.h) refuses any other, as the real one would fail
// on a host pointer, so a collective handed host memory is caught on the CPU too.
enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3
};
struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};
struct EmulatedAllocations {
  std::mutex mutex;
  std::map<uintptr_t, std::pair<uintptr_t, cudaMemoryType>> blocks;  // start → (end, kind)
};
inline EmulatedAllocations emulated_allocations;
inline cudaMemoryType emulated_memory_type(const void* p, size_t bytes = 1) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(emulated_allocations.mutex);
  auto it = emulated_allocations.blocks.upper_bound(a);
  if (it == emulated_allocations.blocks.begin()) return cudaMemoryTypeUnregistered;
  --it;
  return a + bytes <= it->second.first ? it->second.second : cudaMemoryTypeUnregistered;
}
inline cudaError_t emulated_alloc(void** p, size_t bytes, cudaMemoryType kind) {
  const size_t rounded = (bytes + 255) / 256 * 256 + 256;
  *p = std::aligned_alloc(256, rounded);
  if (!*p) return cudaErrorMemoryAllocation;
  const auto a = reinterpret_cast<uintptr_t>(*p);
  std::lock_guard<std::mutex> lock(emulated_allocations.mutex);
  emulated_allocations.blocks[a] = {a + rounded, kind};
  return cudaSuccess;
}
inline cudaError_t cudaMalloc(void** p, size_t bytes) {
  return emulated_alloc(p, bytes, cudaMemoryTypeDevice);
}
inline cudaError_t cudaFree(void* p) {
  if (p) {
    std::lock_guard<std::mutex> lock(emulated_allocations.mutex);
    emulated_allocations.blocks.erase(reinterpret_cast<uintptr_t>(p));
  }
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMallocHost(void** p, size_t bytes) {
  return emulated_alloc(p, bytes, cudaMemoryTypeHost);
}
inline cudaError_t cudaFreeHost(void* p) {
  return cudaFree(p);
}
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  *a = {};
  a->type = emulated_memory_type(p);
  if (a->type == cudaMemoryTypeDevice) a->devicePointer = const_cast<void*>(p);
  if (a->type == cudaMemoryTypeHost) a->hostPointer = const_cast<void*>(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}
// Streams and events: the emulated device runs every launch and copy at once, in program order,
// so a stream is a name and ordering through events holds by construction.
using cudaEvent_t = void*;
inline constexpr unsigned cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaEventDisableTiming = 2;
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  static char streams;
  *s = &streams;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) {
  return cudaSuccess;
}
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  static char events;
  *e = &events;
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t) {
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t = nullptr) {
  return cudaSuccess;
}
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned = 0) {
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t = nullptr) {
  return cudaMemset(p, value, bytes);
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                                   cudaStream_t = nullptr) {
  return cudaMemcpy(dst, src, bytes, kind);
}
inline cudaError_t cudaDeviceSynchronize() {
  return cudaSuccess;
}
inline cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = *total = size_t{1} << 30;
  return cudaSuccess;
}
// The one emulated device: its name says so, its memory is cudaMemGetInfo's.
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major, minor;
};
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (device != 0) return cudaErrorInvalidDevice;
  *p = {};
  std::strncpy(p->name, "sft CPU emulation of a CUDA device", sizeof(p->name) - 1);
  p->totalGlobalMem = size_t{1} << 30;
  p->major = 9;
  p->minor = 0;
  return cudaSuccess;
}

#define __global__
#define __device__
#define __host__
#define __shared__ static

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct emu_uint3 {
  unsigned x = 0, y = 0, z = 0;
};

namespace emu {

// The threads of one block of a synchronizing kernel, as fibers on the calling thread: each runs
// until its next __syncthreads (or its end), then the next one; a round over all of them is one
// barrier phase. Deterministic, and no OS threads to busy a shared CPU. A fiber's stack is made
// once (ucontext) and then reused for every block; switching is _setjmp/_longjmp, which saves
// no signal mask, so a barrier costs no system call (swapcontext's two made a training step
// of the emulated device take minutes).
struct Jump {
  jmp_buf at;
};
struct Fibers {
  static constexpr size_t kStackBytes = 256 * 1024;
  std::vector<ucontext_t> context;  // each fiber's first entry only
  std::vector<std::unique_ptr<char[]>> stacks;
  std::vector<Jump> start;   // parked at the top of its loop, ready for a block
  std::vector<Jump> resume;  // parked in __syncthreads
  std::vector<char> begun, done;
  jmp_buf scheduler;
  unsigned current = 0;
  const std::function<void()>* body = nullptr;
};
inline Fibers fibers;

inline emu_uint3 thread_idx;
inline emu_uint3 block_idx;
inline dim3 block_dim;

// A fiber's whole life: park at the top (back to the scheduler), run one thread's body when a
// block resumes it there, mark it done, park again. Only globals across the jumps.
inline void fiber_main() {
  for (;;) {
    if (_setjmp(fibers.start[fibers.current].at) == 0) _longjmp(fibers.scheduler, 1);
    fibers.begun[fibers.current] = 1;
    (*fibers.body)();
    fibers.done[fibers.current] = 1;
  }
}

// Fibers for `threads` threads: new ones entered once, to park at their start.
inline void ensure_fibers(unsigned threads) {
  while (fibers.stacks.size() < threads) {
    const unsigned tx = static_cast<unsigned>(fibers.stacks.size());
    fibers.stacks.push_back(std::make_unique<char[]>(Fibers::kStackBytes));
    fibers.context.resize(tx + 1);
    fibers.start.resize(tx + 1);
    fibers.resume.resize(tx + 1);
    ucontext_t& c = fibers.context[tx];
    getcontext(&c);
    c.uc_stack.ss_sp = fibers.stacks[tx].get();
    c.uc_stack.ss_size = Fibers::kStackBytes;
    c.uc_link = nullptr;  // never returns: it parks
    makecontext(&c, fiber_main, 0);
    fibers.current = tx;
    ucontext_t here;
    if (_setjmp(fibers.scheduler) == 0) swapcontext(&here, &c);
  }
}

// Runs f (one thread's body) for every thread of every block, blocks one after another.
// `sync`: the kernel calls __syncthreads, so its threads run as fibers; otherwise one after
// another, each to its end.
template <typename F>
void launch(dim3 grid, dim3 block, bool sync, F&& f) {
  block_dim = block;
  const std::function<void()> body = f;
  if (sync) ensure_fibers(block.x);
  for (unsigned by = 0; by < grid.y; ++by)
    for (unsigned bx = 0; bx < grid.x; ++bx) {
      block_idx = {bx, by, 0};
      if (!sync) {
        for (unsigned tx = 0; tx < block.x; ++tx) {
          thread_idx = {tx, 0, 0};
          f();
        }
        continue;
      }
      fibers.body = &body;
      fibers.begun.assign(block.x, 0);
      fibers.done.assign(block.x, 0);
      for (bool running = true; running;) {
        running = false;
        for (unsigned tx = 0; tx < block.x; ++tx) {
          if (fibers.done[tx]) continue;
          running = true;
          fibers.current = tx;
          thread_idx = {tx, 0, 0};
          if (_setjmp(fibers.scheduler) == 0)
            _longjmp(fibers.begun[tx] ? fibers.resume[tx].at : fibers.start[tx].at, 1);
        }
      }
    }
}
}  // namespace emu

#define threadIdx (::emu::thread_idx)
#define blockIdx (::emu::block_idx)
#define blockDim (::emu::block_dim)

inline void __syncthreads() {
  if (_setjmp(emu::fibers.resume[emu::fibers.current].at) == 0) _longjmp(emu::fibers.scheduler, 1);
}

inline float __uint_as_float(uint32_t u) {
  return std::bit_cast<float>(u);
}
inline uint32_t __float_as_uint(float f) {
  return std::bit_cast<uint32_t>(f);
}
// Compiled with -ffp-contract=off, so these are single IEEE operations as on the GPU.
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fadd_rn(float a, float b) {
  return a + b;
}
inline float __fsub_rn(float a, float b) {
  return a - b;
}
inline float __fdiv_rn(float a, float b) {
  return a / b;
}
inline float __fsqrt_rn(float a) {
  return std::sqrt(a);
}
inline double __dadd_rn(double a, double b) {
  return a + b;
}
inline double __dmul_rn(double a, double b) {
  return a * b;
}
