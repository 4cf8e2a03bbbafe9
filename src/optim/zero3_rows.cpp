// ZeRO-3's lookup rows fetched from their owners. See zero3_rows.h.
#include "optim/zero3_rows.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/page_release.h"

namespace sft {

Zero3TableRows::Zero3TableRows(Comm& dp, ShardRange run, size_t width)
    : dp_(dp), run_(run), width_(width) {
  if (width == 0 || run.size() % width != 0)
    fail("optim", "ZeRO-3 lookup: a run of " + std::to_string(run.size()) +
                      " elements is not rows of " + std::to_string(width));
}

ShardRange Zero3TableRows::part_of(int64_t id, ShardRange shard) const {
  const size_t b = run_.begin + static_cast<size_t>(id) * width_, e = b + width_;
  const size_t lo = std::clamp(shard.begin, b, e), hi = std::clamp(shard.end, b, e);
  return {lo, std::max(lo, hi)};
}

void Zero3TableRows::fetch(std::span<float> values, std::span<const int64_t> ids) {
  const auto rows = static_cast<int64_t>(run_.size() / width_);
  ids_.clear();
  for (const int64_t id : ids)
    if (id >= 0 && id < rows) ids_.push_back(id);
  std::sort(ids_.begin(), ids_.end());
  ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
  const auto np = static_cast<size_t>(dp_.size());
  const size_t n = values.size();
  // 1. How many ids each rank wants. 2. The ids themselves, every rank's to every rank.
  const std::vector<size_t> one(np, 1);
  const std::vector<int64_t> mine(np, static_cast<int64_t>(ids_.size()));
  std::vector<int64_t> counts(np);
  dp_.all_to_all(mine.data(), one, counts.data(), one, sizeof(int64_t));
  std::vector<size_t> want(np);
  std::vector<int64_t> send_ids;
  for (size_t r = 0; r < np; ++r) {
    want[r] = static_cast<size_t>(counts[r]);
    send_ids.insert(send_ids.end(), ids_.begin(), ids_.end());
  }
  std::vector<size_t> send_counts(np, ids_.size());
  size_t total = 0;
  for (size_t c : want) total += c;
  std::vector<int64_t> wanted(total);
  dp_.all_to_all(send_ids.data(), send_counts, wanted.data(), want, sizeof(int64_t));
  any_ids_ = wanted;
  std::sort(any_ids_.begin(), any_ids_.end());
  any_ids_.erase(std::unique(any_ids_.begin(), any_ids_.end()), any_ids_.end());
  // 3. To each rank, the own part of each row it wants, in its order.
  const ShardRange own = dp_.my_shard(n);
  std::vector<float> send;
  const int64_t* next = wanted.data();
  for (size_t r = 0; r < np; ++r) {
    const size_t before = send.size();
    for (size_t i = 0; i < want[r]; ++i, ++next) {
      const ShardRange p = part_of(*next, own);
      send.insert(send.end(), values.begin() + static_cast<std::ptrdiff_t>(p.begin),
                  values.begin() + static_cast<std::ptrdiff_t>(p.end));
    }
    send_counts[r] = send.size() - before;
  }
  std::vector<size_t> recv_counts(np, 0);
  for (size_t o = 0; o < np; ++o) {
    const ShardRange theirs = shard_of(n, static_cast<int>(o), static_cast<int>(np));
    for (const int64_t id : ids_) recv_counts[o] += part_of(id, theirs).size();
  }
  size_t received = 0;
  for (size_t c : recv_counts) received += c;
  std::vector<float> recv(received);
  dp_.all_to_all(send.data(), send_counts, recv.data(), recv_counts, sizeof(float));
  const float* from = recv.data();
  for (size_t o = 0; o < np; ++o) {
    const ShardRange theirs = shard_of(n, static_cast<int>(o), static_cast<int>(np));
    for (const int64_t id : ids_) {
      const ShardRange p = part_of(id, theirs);
      if (o != static_cast<size_t>(dp_.rank()))  // the own parts are in place already
        std::memcpy(values.data() + p.begin, from, p.size() * sizeof(float));
      from += p.size();
    }
  }
}

void Zero3TableRows::release(std::span<float> values) {
  const ShardRange own = dp_.my_shard(values.size());
  for (const int64_t id : ids_) {
    const ShardRange row = part_of(id, {0, values.size()});
    const ShardRange keep = part_of(id, own);
    zero_and_release(values.data() + row.begin, (keep.begin - row.begin) * sizeof(float));
    zero_and_release(values.data() + keep.end, (row.end - keep.end) * sizeof(float));
  }
  ids_.clear();
}

std::vector<ShardRange> Zero3TableRows::any_fetched_in(ShardRange r) const {
  std::vector<ShardRange> out;
  // From the first fetched row that ends after r.begin.
  auto it = std::lower_bound(any_ids_.begin(), any_ids_.end(), r.begin, [&](int64_t id, size_t b) {
    return run_.begin + (static_cast<size_t>(id) + 1) * width_ <= b;
  });
  for (; it != any_ids_.end(); ++it) {
    const size_t row = run_.begin + static_cast<size_t>(*it) * width_;
    if (row >= r.end) break;
    out.push_back({std::max(row, r.begin), std::min(row + width_, r.end)});
  }
  return out;
}

}  // namespace sft
