// The collectives' arithmetic over an implementation's data movement (see comm.h): a
// bucket's shards go to their owners (exchange), each owner sums its shard over ranks in
// rank order, and the sums go back to everyone (gather_all). That is a reduce-scatter and
// an all-gather, the bandwidth of a ring all-reduce, with a reduction order fixed by rank
// so every rank gets the same bits.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "parallel/comm.h"
#include "parallel/watchdog.h"

namespace sft {

ShardRange shard_of(size_t n, int rank, int size) {
  const auto r = static_cast<unsigned __int128>(rank), s = static_cast<unsigned __int128>(size);
  return {static_cast<size_t>(n * r / s), static_cast<size_t>(n * (r + 1) / s)};
}

Comm::Comm() = default;
Comm::~Comm() = default;

void Comm::set_timeout(double seconds) {
  watchdog_.reset();
  if (seconds > 0 && size() > 1)
    watchdog_ = std::make_unique<CollectiveWatchdog>(rank(), size(), seconds);
}

namespace {

// How an element type is summed: f32 and bf16 in double, the rest in their own type.
template <typename T>
double to_acc(T v) {
  if constexpr (std::is_same_v<T, uint16_t>)
    return bf16_to_f32(v);
  else
    return static_cast<double>(v);
}
template <typename T>
T from_acc(double v) {
  if constexpr (std::is_same_v<T, uint16_t>)
    return f32_to_bf16(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

struct Layout {
  std::vector<size_t> counts, displs;
};
Layout shard_layout(size_t n, int size) {
  Layout l;
  for (int r = 0; r < size; ++r) {
    const ShardRange s = shard_of(n, r, size);
    l.counts.push_back(s.size());
    l.displs.push_back(s.begin);
  }
  return l;
}
// The parts of the whole-array shards (of n elements) inside the bucket [b0, b0 + len),
// relative to b0.
Layout bucket_of_shards(size_t n, size_t b0, size_t len, int size) {
  Layout l;
  for (int r = 0; r < size; ++r) {
    const ShardRange s = shard_of(n, r, size);
    const size_t lo = std::max(s.begin, b0), hi = std::min(s.end, b0 + len);
    l.counts.push_back(hi > lo ? hi - lo : 0);
    l.displs.push_back(hi > lo ? lo - b0 : 0);
  }
  return l;
}

// out[i] = the sum (or maximum) over ranks r of recv[r · count + i], in rank order. Sums run
// a tile of elements at a time, rank by rank: per element the same additions in the same
// order as one element at a time (0 + rank 0 + rank 1 + ...), in loops the compiler
// vectorizes.
template <typename T, typename Acc, bool kMax>
void combine_ranks(const T* recv, size_t count, int n_ranks, T* out) {
  if constexpr (kMax) {
    for (size_t i = 0; i < count; ++i) {
      T acc = recv[i];
      for (int r = 1; r < n_ranks; ++r) {
        const T v = recv[size_t(r) * count + i];
        if (v > acc || v != v) acc = v;
      }
      out[i] = acc;
    }
  } else {
    constexpr size_t kTile = 256;
    for (size_t i0 = 0; i0 < count; i0 += kTile) {
      const size_t len = std::min(kTile, count - i0);
      Acc acc[kTile] = {};
      for (int r = 0; r < n_ranks; ++r) {
        const T* from = recv + size_t(r) * count + i0;
        for (size_t k = 0; k < len; ++k) {
          if constexpr (std::is_same_v<Acc, double>)
            acc[k] += to_acc(from[k]);
          else
            acc[k] += from[k];
        }
      }
      for (size_t k = 0; k < len; ++k) {
        if constexpr (std::is_same_v<Acc, double>)
          out[i0 + k] = from_acc<T>(acc[k]);
        else
          out[i0 + k] = static_cast<T>(acc[k]);
      }
    }
  }
}

}  // namespace

template <typename T, typename Acc, bool kMax>
void Comm::reduce_shards(std::span<T> values, bool gather, const char* what, size_t begin,
                         size_t end, size_t layout_n, size_t offset, T* sums_to) {
  const int n_ranks = size();
  end = std::min(end, values.size());
  if (n_ranks == 1 || begin >= end) return;
  CollectiveScope scope(watchdog_.get(), &collective_s_, what, end - begin);
  // An all-reduce splits every bucket evenly over the ranks (all of them work on each
  // bucket). A reduce-scatter must leave the whole-array shards (ZeRO-1's layout), so each
  // bucket carries the parts of those shards that fall inside it.
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  for (size_t b0 = begin; b0 < end; b0 += kBucketElements) {
    const size_t len = std::min(kBucketElements, end - b0);
    T* data = values.data() + b0;
    const size_t n_layout = layout_n == static_cast<size_t>(-1) ? values.size() : layout_n;
    const Layout send =
        gather ? shard_layout(len, n_ranks) : bucket_of_shards(n_layout, offset + b0, len, n_ranks);
    const ShardRange mine = {send.displs[size_t(rank())],
                             send.displs[size_t(rank())] + send.counts[size_t(rank())]};
    // From every rank, its copy of my shard, rank-major.
    Layout from;
    for (int r = 0; r < n_ranks; ++r) {
      from.counts.push_back(mine.size());
      from.displs.push_back(static_cast<size_t>(r) * mine.size());
    }
    const size_t recv_elems = static_cast<size_t>(n_ranks) * mine.size();
    const std::span<T> recv = reduce_scratch_.as<T>(recv_elems);
    exchange(data, send.counts, send.displs, recv.data(), from.counts, from.displs, sizeof(T));
    T* sums = sums_to ? sums_to + offset + b0 : data;
    combine_ranks<T, Acc, kMax>(recv.data(), mine.size(), n_ranks, sums + mine.begin);
    if (gather) gather_all(data, send.counts, send.displs, sizeof(T));
  }
}

template <typename T>
void Comm::gather_shards(std::span<T> values, const char* what) {
  if (size() == 1 || values.empty()) return;
  CollectiveScope scope(watchdog_.get(), &collective_s_, what, values.size());
  const Layout l = shard_layout(values.size(), size());
  gather_all(values.data(), l.counts, l.displs, sizeof(T));
}

template <typename T>
void Comm::gather_shard_range(std::span<T> values, size_t begin, size_t end, const char* what) {
  end = std::min(end, values.size());
  if (size() == 1 || begin >= end) return;
  CollectiveScope scope(watchdog_.get(), &collective_s_, what, end - begin);
  const Layout l = bucket_of_shards(values.size(), begin, end - begin, size());
  gather_all(values.data() + begin, l.counts, l.displs, sizeof(T));
}

template <typename T>
std::unique_ptr<Comm::Pending> Comm::start_shard_range(std::span<T> values, size_t begin,
                                                       size_t end, const char* what) {
  end = std::min(end, values.size());
  if (size() == 1 || begin >= end) return nullptr;
  CollectiveScope scope(watchdog_.get(), &collective_s_, what, end - begin);
  const Layout l = bucket_of_shards(values.size(), begin, end - begin, size());
  return start_gather_all(values.data() + begin, l.counts, l.displs, sizeof(T));
}

std::unique_ptr<Comm::Pending> Comm::start_gather_all(void* data, std::span<const size_t> counts,
                                                      std::span<const size_t> displs,
                                                      size_t elem_size) {
  gather_all(data, counts, displs, elem_size);
  return nullptr;
}

std::unique_ptr<Comm::Pending> Comm::all_gather_start(std::span<float> v, size_t begin,
                                                      size_t end) {
  return start_shard_range(v, begin, end, "all_gather_start(f32, range)");
}
std::unique_ptr<Comm::Pending> Comm::all_gather_start(std::span<uint16_t> v, size_t begin,
                                                      size_t end) {
  return start_shard_range(v, begin, end, "all_gather_start(16-bit, range)");
}

void Comm::wait(std::unique_ptr<Pending>& pending) {
  if (!pending) return;
  CollectiveScope scope(watchdog_.get(), &collective_s_, "wait(all_gather_start)", 0);
  pending->wait();
  pending.reset();
}

void Comm::all_reduce_sum(std::span<float> v) {
  reduce_shards<float, double>(v, true, "all_reduce_sum(f32)");
}
void Comm::all_reduce_sum(std::span<double> v) {
  reduce_shards<double, double>(v, true, "all_reduce_sum(f64)");
}
void Comm::all_reduce_sum(std::span<int64_t> v) {
  reduce_shards<int64_t, int64_t>(v, true, "all_reduce_sum(i64)");
}
void Comm::all_reduce_sum_bf16(std::span<uint16_t> v) {
  reduce_shards<uint16_t, double>(v, true, "all_reduce_sum(bf16)");
}
void Comm::all_reduce_max(std::span<float> v) {
  reduce_shards<float, float, true>(v, true, "all_reduce_max(f32)");
}
void Comm::all_reduce_max(std::span<double> v) {
  reduce_shards<double, double, true>(v, true, "all_reduce_max(f64)");
}
void Comm::reduce_scatter_sum(std::span<float> v) {
  reduce_shards<float, double>(v, false, "reduce_scatter_sum(f32)");
}
void Comm::reduce_scatter_sum(std::span<float> v, size_t begin, size_t end) {
  reduce_shards<float, double>(v, false, "reduce_scatter_sum(f32, range)", begin, end);
}
void Comm::all_gather(std::span<float> v, size_t begin, size_t end) {
  gather_shard_range(v, begin, end, "all_gather(f32, range)");
}
void Comm::all_gather(std::span<uint16_t> v, size_t begin, size_t end) {
  gather_shard_range(v, begin, end, "all_gather(16-bit, range)");
}
void Comm::all_gather_part(std::span<float> part, size_t n, size_t begin) {
  if (begin > n || part.size() > n - begin)
    fail("parallel", "all_gather_part: [" + std::to_string(begin) + ", +" +
                         std::to_string(part.size()) + ") is outside an array of " +
                         std::to_string(n));
  if (size() == 1 || part.empty()) return;
  CollectiveScope scope(watchdog_.get(), &collective_s_, "all_gather(f32, part)", part.size());
  const Layout l = bucket_of_shards(n, begin, part.size(), size());
  gather_all(part.data(), l.counts, l.displs, sizeof(float));
}
void Comm::reduce_scatter_part(std::span<float> part, size_t n, size_t begin,
                               std::span<float> whole) {
  if (begin > n || part.size() > n - begin)
    fail("parallel", "reduce_scatter_part: [" + std::to_string(begin) + ", +" +
                         std::to_string(part.size()) + ") is outside an array of " +
                         std::to_string(n));
  if (!whole.empty() && whole.size() != n)
    fail("parallel", "reduce_scatter_part: sums for an array of " + std::to_string(n) +
                         " elements into one of " + std::to_string(whole.size()));
  if (size() == 1 && !whole.empty())  // the sums over one rank: its own values
    std::copy(part.begin(), part.end(), whole.begin() + static_cast<std::ptrdiff_t>(begin));
  reduce_shards<float, double>(part, false, "reduce_scatter_sum(f32, part)", 0, part.size(), n,
                               begin, whole.empty() ? nullptr : whole.data());
}
void Comm::all_gather(std::span<float> v) {
  gather_shards(v, "all_gather(f32)");
}
void Comm::all_gather(std::span<uint16_t> v) {
  gather_shards(v, "all_gather(16-bit)");
}

void Comm::broadcast(std::span<float> v, int root) {
  if (size() == 1) return;
  CollectiveScope scope(watchdog_.get(), &collective_s_, "broadcast(f32)", v.size());
  broadcast_bytes(v.data(), v.size_bytes(), root);
}
void Comm::broadcast(std::span<int64_t> v, int root) {
  if (size() == 1) return;
  CollectiveScope scope(watchdog_.get(), &collective_s_, "broadcast(i64)", v.size());
  broadcast_bytes(v.data(), v.size_bytes(), root);
}

void Comm::all_to_all(const void* send, std::span<const size_t> send_counts, void* recv,
                      std::span<const size_t> recv_counts, size_t elem_size) {
  const auto n = static_cast<size_t>(size());
  if (send_counts.size() != n || recv_counts.size() != n)
    fail("parallel", "all_to_all: " + std::to_string(send_counts.size()) + " send and " +
                         std::to_string(recv_counts.size()) + " receive counts for " +
                         std::to_string(n) + " ranks");
  size_t total = 0;
  for (size_t c : recv_counts) total += c;
  CollectiveScope scope(watchdog_.get(), &collective_s_, "all_to_all", total);
  std::vector<size_t> send_displs(n), recv_displs(n);
  for (size_t r = 1; r < n; ++r) {
    send_displs[r] = send_displs[r - 1] + send_counts[r - 1];
    recv_displs[r] = recv_displs[r - 1] + recv_counts[r - 1];
  }
  exchange(send, send_counts, send_displs, recv, recv_counts, recv_displs, elem_size);
}

void Comm::barrier() {
  if (size() == 1) return;
  CollectiveScope scope(watchdog_.get(), &collective_s_, "barrier", 0);
  do_barrier();
}

std::unique_ptr<Comm> make_comm_from_environment() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && std::atoi(v) > 1) return make_mpi_comm();
  }
  return make_local_comm();
}

}  // namespace sft
