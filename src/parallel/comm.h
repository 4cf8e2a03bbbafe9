// Communicators for distributed training. `local` is the single-process communicator;
// `mpi` (built with SFT_MPI, the default) spans the processes mpirun launched.
//
// The contract every implementation keeps:
//   - Sums are deterministic and identical on every rank: the reduction of a shard is done
//     by its owner in rank order 0..size-1 (f32 and bf16 accumulate in double, bf16 is
//     moved as bf16 and rounded once), then shared. Same inputs and size → same bits.
//   - Shards are balanced contiguous ranges: rank r of s owns [n·r/s, n·(r+1)/s) of n
//     elements (shard_of); reduce_scatter and all_gather use that layout (ZeRO-1's too).
//   - Large arrays go in buckets of kBucketElements, so scratch memory stays bounded.
//   - Every collective is named while it runs; with set_timeout(s) > 0 a watchdog thread
//     ends the process (exit 124) when one is still running after s seconds, naming it
//     (transformers' ddp_timeout). Under mpirun that brings the whole job down.
// Implementations supply only data movement (exchange, gather_all, broadcast_bytes,
// barrier, split, and optionally start_gather_all for a non-blocking all-gather); the
// arithmetic lives here, once. Depends on core only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/huge_buffer.h"

namespace sft {

class CollectiveWatchdog;

struct ShardRange {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
};
// Rank r's part of n elements split over `size` ranks.
ShardRange shard_of(size_t n, int rank, int size);

class Comm {
 public:
  static constexpr size_t kBucketElements = size_t{1} << 22;  // 16 MiB of f32 per bucket

  Comm();
  virtual ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "local" or "mpi".
  virtual std::string kind() const = 0;

  // In-place sums over all ranks; every rank ends with the same values.
  void all_reduce_sum(std::span<float> values);
  void all_reduce_sum(std::span<double> values);
  void all_reduce_sum(std::span<int64_t> values);
  void all_reduce_sum_bf16(std::span<uint16_t> values);  // summed in fp32, rounded once
  // In place, element-wise maximum over all ranks (NaN wins, as in a sum).
  void all_reduce_max(std::span<float> values);
  void all_reduce_max(std::span<double> values);
  // In place: afterwards values[shard_of(n, rank, size)] holds the sum over ranks of that
  // range; the rest of `values` is left as it was.
  void reduce_scatter_sum(std::span<float> values);
  // In place: every rank contributes values[shard_of(n, rank, size)]; afterwards all of
  // `values` holds every rank's shard.
  void all_gather(std::span<float> values);
  void all_gather(std::span<uint16_t> values);
  // The same two on [begin, end) of `values` only, keeping the whole array's shard layout:
  // each rank owns the part of its whole-array shard inside the range (ZeRO-2 reduces a
  // layer's gradients as its backward completes, ZeRO-3 gathers a layer's weights).
  void reduce_scatter_sum(std::span<float> values, size_t begin, size_t end);
  void all_gather(std::span<float> values, size_t begin, size_t end);
  void all_gather(std::span<uint16_t> values, size_t begin, size_t end);
  // The same gather for state a rank keeps as its own shard only (ZeRO's moments): `part` is
  // [begin, begin + part.size()) of an n-element array with the whole-array shard layout; each
  // rank has put the elements it owns of that range at their place in `part`, afterwards all
  // of `part` holds them (a checkpoint gathers the moments a tensor at a time this way).
  void all_gather_part(std::span<float> part, size_t n, size_t begin);
  // Its reduce-scatter: each rank's `part` holds its values of [begin, begin + part.size());
  // afterwards the elements of part this rank owns (in the n-element layout) hold the sums
  // over ranks, the same bits as reduce_scatter_sum(values, begin, end) there; the rest of
  // part is left as it was (ZeRO-3's head gradient, reduced from a block buffer).
  // whole (n elements, or empty): the sums go to whole[j] for each owned element j instead,
  // and part keeps its own values there (the head's block reduced straight into the arena,
  // without a copy back).
  void reduce_scatter_part(std::span<float> part, size_t n, size_t begin,
                           std::span<float> whole = {});
  // A collective started and not yet complete (the non-blocking all_gather_start): the
  // array's range must not be touched until Comm::wait. Destroyed unfinished it is waited for
  // (but not while an exception unwinds: that rank is going down, its peers with it).
  class Pending {
   public:
    virtual ~Pending() = default;
    virtual void wait() = 0;
  };
  // The range all-gather above, started and returned at once (MPI_Iallgatherv), so that it
  // moves while this rank computes (ZeRO-3 gathers the next layer during this one's pass).
  // The same bits as all_gather(values, begin, end); every rank starts and waits for the same
  // ones in the same order, with other collectives in between allowed. Null: nothing to wait
  // for (one rank, an empty range, or a communicator without non-blocking collectives, which
  // gathers before returning).
  std::unique_ptr<Pending> all_gather_start(std::span<float> values, size_t begin, size_t end);
  std::unique_ptr<Pending> all_gather_start(std::span<uint16_t> values, size_t begin, size_t end);
  // Completes a started collective (null: none) and drops it.
  void wait(std::unique_ptr<Pending>& pending);
  // Root's values on every rank.
  void broadcast(std::span<float> values, int root);
  void broadcast(std::span<int64_t> values, int root);
  void barrier();
  // All-to-all of variable blocks (expert parallelism's rows): send holds a block per rank,
  // one after another in rank order (send_counts[r] elements of elem_size bytes for rank r);
  // afterwards recv holds the block each rank sent here, in rank order (recv_counts[r] from
  // rank r, which the caller knows from an earlier exchange of counts).
  void all_to_all(const void* send, std::span<const size_t> send_counts, void* recv,
                  std::span<const size_t> recv_counts, size_t elem_size);
  // A sub-communicator of the ranks with the same color, ordered by key (MPI_Comm_split).
  virtual std::unique_ptr<Comm> split(int color, int key) = 0;

  // The watchdog's limit for any one collective (seconds; <= 0 turns it off).
  void set_timeout(double seconds);
  ShardRange my_shard(size_t n) const { return shard_of(n, rank(), size()); }
  // Wall seconds this rank has spent inside collectives (waiting included), for the
  // communication share of a step.
  double collective_seconds() const { return collective_s_; }

 protected:
  // Data movement, in elements of elem_size bytes (1, 2, 4 or 8). Counts and displacements
  // are per rank, in elements.
  // exchange: sends send[send_displs[r] .. + send_counts[r]) to rank r, receives rank r's
  // into recv[recv_displs[r] ..] (MPI_Alltoallv).
  virtual void exchange(const void* send, std::span<const size_t> send_counts,
                        std::span<const size_t> send_displs, void* recv,
                        std::span<const size_t> recv_counts, std::span<const size_t> recv_displs,
                        size_t elem_size) = 0;
  // In place: rank r's block data[displs[r] .. + counts[r]) reaches every rank
  // (MPI_Allgatherv with MPI_IN_PLACE).
  virtual void gather_all(void* data, std::span<const size_t> counts,
                          std::span<const size_t> displs, size_t elem_size) = 0;
  // gather_all started without waiting (MPI_Iallgatherv); counts and displs may go away on
  // return. This default moves the data at once and returns null.
  virtual std::unique_ptr<Pending> start_gather_all(void* data, std::span<const size_t> counts,
                                                    std::span<const size_t> displs,
                                                    size_t elem_size);
  virtual void broadcast_bytes(void* data, size_t bytes, int root) = 0;
  virtual void do_barrier() = 0;

 private:
  // Over [begin, end) of `values` (end = npos: its size).
  template <typename T, typename Acc, bool kMax = false>
  // layout_n: `values` is the part from element `offset` on of a layout_n-element array,
  // whose whole-array shards the reduce-scatter leaves (npos: values is the whole array).
  // sums_to (a reduce-scatter's only): that whole array, where the sums go instead of into
  // values (null: values).
  void reduce_shards(std::span<T> values, bool gather, const char* what, size_t begin = 0,
                     size_t end = static_cast<size_t>(-1),
                     size_t layout_n = static_cast<size_t>(-1), size_t offset = 0,
                     T* sums_to = nullptr);
  template <typename T>
  void gather_shards(std::span<T> values, const char* what);
  template <typename T>
  void gather_shard_range(std::span<T> values, size_t begin, size_t end, const char* what);
  template <typename T>
  std::unique_ptr<Pending> start_shard_range(std::span<T> values, size_t begin, size_t end,
                                             const char* what);

  std::unique_ptr<CollectiveWatchdog> watchdog_;
  double collective_s_ = 0;
  // reduce_shards' receive buffer (a bucket's worth at most), kept between calls: allocated
  // afresh, its pages were faulted in and zeroed again by every call (ZeRO-2 reduces per layer
  // and per LM head block, several calls a step). On huge pages: the exchange copies into it
  // through the kernel, page by page (core/huge_buffer.h).
  HugeBuffer reduce_scratch_;
  friend class CollectiveScope;
};

std::unique_ptr<Comm> make_local_comm();
// Initialises MPI on first use (MPI_THREAD_FUNNELED, errors returned, never fatal) and
// returns MPI_COMM_WORLD. Throws "[parallel] sft was built without MPI; ..." in builds without
// SFT_MPI.
std::unique_ptr<Comm> make_mpi_comm();
// Whether this build has the MPI communicator.
bool mpi_built();
// MPI when launched under mpirun (OMPI_COMM_WORLD_SIZE / PMI_SIZE / PMIX_SIZE > 1), else
// local.
std::unique_ptr<Comm> make_comm_from_environment();

}  // namespace sft
