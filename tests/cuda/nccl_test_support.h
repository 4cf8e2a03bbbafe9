// Support for the device-communicator tests (tests/cuda/nccl_*_test.cpp): the process's world
// Comm (MPI under mpirun, kept for the whole binary: MPI starts once), the skip when there is
// one rank or no device, and arrays in device memory.
//
// They run with several ranks: the emulation under `mpirun -np 2` (tests/cuda/emulation/run.sh,
// the NCCL calls served by its nccl.h over MPI), a GPU machine with one rank per GPU. Only
// EXPECTs inside a collective's reach: a rank that returned early would leave the others
// waiting in the next one.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/arena.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_memory.h"
#include "parallel/comm.h"
#include "train/device_choice.h"

namespace sft::nccl_test {

// The world, and each rank's GPU chosen as `sft train` chooses it (train/device_choice.h: the
// local rank's), since NCCL refuses two ranks on one device.
inline Comm& world() {
  static std::unique_ptr<Comm> w = [] {
    std::unique_ptr<Comm> c = make_comm_from_environment();
    c->set_timeout(120);
    const DeviceChoice choice = choose_device(device_environment(), false);
    if (choice.device == Device::kCuda) cuda_init(choice.gpu);
    return c;
  }();
  return *w;
}

// The first statement of every test: a device and at least two ranks (mpirun -np 2).
#define SFT_SKIP_WITHOUT_RANKS()                                                    \
  if (!::sft::cuda_available()) GTEST_SKIP() << "no CUDA device";                   \
  if (::sft::nccl_test::world().size() < 2)                                         \
  GTEST_SKIP() << "one rank: the device communicator tests run under mpirun -np 2 " \
                  "(tests/cuda/emulation/run.sh does)"

// n elements of T in device memory, filled from and read back to host vectors.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : n_(host.size()) {
    arena_.reserve(std::max<size_t>(1, n_ * sizeof(T)));
    if (n_) ops::cuda::copy_to_device(arena_.data(), host.data(), n_ * sizeof(T));
  }
  T* data() { return reinterpret_cast<T*>(arena_.data()); }
  std::vector<T> read() const {
    std::vector<T> out(n_);
    ops::cuda::synchronize();
    if (n_) ops::cuda::copy_to_host(out.data(), arena_.data(), n_ * sizeof(T));
    return out;
  }

 private:
  size_t n_;
  Arena arena_{cuda_allocator()};
};

}  // namespace sft::nccl_test
