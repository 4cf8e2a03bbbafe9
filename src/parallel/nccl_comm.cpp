// The NCCL DeviceComm (device_comm.h), compiled in CUDA builds (and, against the CPU stand-ins
// tests/cuda/emulation/nccl.h and cuda_runtime.h, in the emulated test binary). Every call is
// enqueued on the default stream, where the CUDA backend runs all its kernels (cuda_memory.h),
// but the started all-reduces, which go on a stream of their own (device_comm.h).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/cuda/cuda_check.h"
#include "parallel/device_comm.h"

namespace sft {

namespace {

// NCCL's own words about the last failure (its argument is unused: the text is per thread).
std::string last_error() {
  const char* text = ncclGetLastError(nullptr);
  return text && *text ? std::string(": ") + text : std::string();
}

void check_nccl(ncclResult_t rc, const char* call, const char* file, int line) {
  if (rc == ncclSuccess) return;
  std::string name(call);
  name = name.substr(0, name.find('('));
  fail("parallel", name + " failed (" + file + ":" + std::to_string(line) +
                       "): " + ncclGetErrorString(rc) + last_error() +
                       " (hint: another rank may have died, see its output above; NCCL_DEBUG=WARN "
                       "says more; one rank per GPU: NCCL refuses two ranks on one device)");
}

#define SFT_NCCL_CHECK(call) check_nccl((call), #call, __FILE__, __LINE__)

// The default (legacy) stream: the backend's kernels and copies run there.
const cudaStream_t kStream = nullptr;

class NcclComm final : public DeviceComm {
 public:
  explicit NcclComm(Comm& host) : rank_(host.rank()), size_(host.size()) {
    // Rank 0 makes the id; the host group carries its 128 bytes to the others as int64s.
    ncclUniqueId id{};
    static_assert(sizeof(id) % sizeof(int64_t) == 0);
    std::vector<int64_t> words(sizeof(id) / sizeof(int64_t));
    if (rank_ == 0) {
      SFT_NCCL_CHECK(ncclGetUniqueId(&id));
      std::memcpy(words.data(), &id, sizeof(id));
    }
    host.broadcast(std::span<int64_t>(words), 0);
    std::memcpy(&id, words.data(), sizeof(id));
    SFT_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
  }
  ~NcclComm() override {
    // A failing rank aborts (destroy would wait for peers that may never come).
    if (std::uncaught_exceptions() > 0)
      ncclCommAbort(comm_);
    else
      ncclCommDestroy(comm_);
    if (side_) {  // no throw from a destructor: a failing destroy leaves nothing to do
      cudaEventDestroy(ready_);
      cudaEventDestroy(done_);
      cudaStreamDestroy(side_);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "nccl"; }

  void all_reduce_sum(float* data, size_t n) override { all_reduce(data, n, ncclFloat32); }
  void all_reduce_sum(double* data, size_t n) override { all_reduce(data, n, ncclFloat64); }

  void reduce_scatter_sum(float* data, size_t n) override {
    if (size_ == 1 || n == 0) return;
    if (n % static_cast<size_t>(size_) == 0) {  // shard_of's shards are the equal blocks
      const size_t block = n / static_cast<size_t>(size_);
      SFT_NCCL_CHECK(ncclReduceScatter(data, data + block * static_cast<size_t>(rank_), block,
                                       ncclFloat32, ncclSum, comm_, kStream));
      return;
    }
    SFT_NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < size_; ++r) {
      const ShardRange s = shard_of(n, r, size_);
      if (s.size() == 0) continue;
      SFT_NCCL_CHECK(ncclReduce(data + s.begin, data + s.begin, s.size(), ncclFloat32, ncclSum, r,
                                comm_, kStream));
    }
    SFT_NCCL_CHECK(ncclGroupEnd());
  }

  void all_gather(float* data, size_t n) override { gather(data, n, sizeof(float)); }
  void all_gather(uint16_t* data, size_t n) override { gather(data, n, sizeof(uint16_t)); }

  void broadcast(float* data, size_t n, int root) override {
    if (size_ == 1 || n == 0) return;
    SFT_NCCL_CHECK(ncclBroadcast(data, data, n, ncclFloat32, root, comm_, kStream));
  }

  void start_all_reduce_sum(float* data, size_t n) override {
    if (size_ == 1 || n == 0) return;
    if (!side_) {  // made on first use: most communicators never overlap
      // Non-blocking: the legacy default stream would otherwise wait for it and it for that.
      SFT_CUDA_CHECK(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
      SFT_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
      SFT_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    }
    SFT_CUDA_CHECK(cudaEventRecord(ready_, kStream));
    SFT_CUDA_CHECK(cudaStreamWaitEvent(side_, ready_, 0));
    SFT_NCCL_CHECK(ncclAllReduce(data, data, n, ncclFloat32, ncclSum, comm_, side_));
    started_ = true;
  }

  void finish_started() override {
    if (!started_) return;
    SFT_CUDA_CHECK(cudaEventRecord(done_, side_));
    SFT_CUDA_CHECK(cudaStreamWaitEvent(kStream, done_, 0));
    started_ = false;
  }

  bool is_device_memory(const void* p) const override {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();  // a plain host pointer on an old runtime: not an error to keep
      return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  }

 private:
  void all_reduce(void* data, size_t n, ncclDataType_t type) {
    if (size_ == 1 || n == 0) return;
    SFT_NCCL_CHECK(ncclAllReduce(data, data, n, type, ncclSum, comm_, kStream));
  }
  // Moves bytes only (no arithmetic), so any element size goes as ncclUint8.
  void gather(void* data, size_t n, size_t elem) {
    if (size_ == 1 || n == 0) return;
    char* bytes = static_cast<char*>(data);
    if (n % static_cast<size_t>(size_) == 0) {
      const size_t block = n / static_cast<size_t>(size_) * elem;
      SFT_NCCL_CHECK(ncclAllGather(bytes + block * static_cast<size_t>(rank_), bytes, block,
                                   ncclUint8, comm_, kStream));
      return;
    }
    SFT_NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < size_; ++r) {
      const ShardRange s = shard_of(n, r, size_);
      if (s.size() == 0) continue;
      SFT_NCCL_CHECK(ncclBroadcast(bytes + s.begin * elem, bytes + s.begin * elem, s.size() * elem,
                                   ncclUint8, r, comm_, kStream));
    }
    SFT_NCCL_CHECK(ncclGroupEnd());
  }

  int rank_ = 0, size_ = 1;
  ncclComm_t comm_ = nullptr;
  // The started all-reduces' stream and the events that order it with the default stream.
  cudaStream_t side_ = nullptr;
  cudaEvent_t ready_ = nullptr, done_ = nullptr;
  bool started_ = false;
};

}  // namespace

std::unique_ptr<DeviceComm> make_device_comm(Comm& host) {
  return std::make_unique<NcclComm>(host);
}

bool nccl_built() {
  return true;
}

}  // namespace sft
