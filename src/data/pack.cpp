#include "data/pack.h"

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>

#include "core/error.h"

namespace sft::data {

namespace {

// TRL's _pack_bfd on one map batch: `items` are the pieces to pack, in row order.
void pack_bfd_batch(const std::vector<PackSegment>& items, uint32_t max_length,
                    std::vector<std::vector<PackSegment>>& out) {
  std::vector<uint32_t> order(items.size());
  std::iota(order.begin(), order.end(), 0u);
  // Arrow's sort is stable: equal lengths keep their order.
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return items[a].length > items[b].length; });
  // Room left → bins with exactly that room, oldest first (TRL's segment tree + deques).
  std::map<uint32_t, std::deque<size_t>> by_room;
  for (uint32_t i : order) {
    const uint32_t length = items[i].length;
    size_t bin;
    uint32_t room;
    auto it = by_room.lower_bound(length);
    if (it != by_room.end()) {
      room = it->first;
      bin = it->second.front();
      it->second.pop_front();
      if (it->second.empty()) by_room.erase(it);
    } else {
      room = max_length;
      bin = out.size();
      out.emplace_back();
    }
    out[bin].push_back(items[i]);
    room -= length;
    if (room > 0) by_room[room].push_back(bin);
  }
}

void pack_wrapped_batch(std::span<const uint32_t> lengths, uint32_t first_row, uint32_t max_length,
                        std::vector<std::vector<PackSegment>>& out) {
  std::vector<PackSegment> current;
  uint32_t filled = 0;
  for (size_t k = 0; k < lengths.size(); ++k) {
    uint32_t start = 0;
    while (start < lengths[k]) {
      uint32_t take = std::min(lengths[k] - start, max_length - filled);
      current.push_back({first_row + uint32_t(k), start, take});
      start += take;
      filled += take;
      if (filled == max_length) {
        out.push_back(std::move(current));
        current.clear();
        filled = 0;
      }
    }
  }
  if (!current.empty()) out.push_back(std::move(current));
}

}  // namespace

PackingStrategy parse_packing_strategy(const std::string& name) {
  if (name == "bfd") return PackingStrategy::kBfd;
  if (name == "bfd_split") return PackingStrategy::kBfdSplit;
  if (name == "wrapped") return PackingStrategy::kWrapped;
  fail("data", "unknown packing strategy '" + name + "' (hint: use bfd, bfd_split or wrapped)");
}

const char* packing_strategy_name(PackingStrategy strategy) {
  switch (strategy) {
    case PackingStrategy::kBfd:
      return "bfd";
    case PackingStrategy::kBfdSplit:
      return "bfd_split";
    case PackingStrategy::kWrapped:
      return "wrapped";
  }
  return "?";
}

PackPlan plan_packing(std::span<const uint32_t> lengths, const PackOptions& options) {
  if (options.max_length == 0) fail("data", "packing needs max_length > 0");
  if (options.map_batch_size == 0 || options.map_num_proc == 0)
    fail("data", "packing needs map_batch_size > 0 and map_num_proc > 0");
  const uint32_t L = options.max_length;
  PackPlan plan;
  plan.segments_are_documents = options.strategy != PackingStrategy::kWrapped;
  const size_t n = lengths.size(), shards = options.map_num_proc;
  for (size_t s = 0; s < shards; ++s) {
    // datasets' contiguous sharding: the first n % shards shards get one extra row.
    size_t shard_start = (n / shards) * s + std::min(s, n % shards);
    size_t shard_end = shard_start + n / shards + (s < n % shards ? 1 : 0);
    for (size_t b = shard_start; b < shard_end; b += options.map_batch_size) {
      size_t e = std::min<size_t>(b + options.map_batch_size, shard_end);
      if (options.strategy == PackingStrategy::kWrapped) {
        pack_wrapped_batch(lengths.subspan(b, e - b), uint32_t(b), L, plan.rows);
        continue;
      }
      std::vector<PackSegment> items;
      for (size_t r = b; r < e; ++r) {
        if (lengths[r] == 0) continue;
        if (options.strategy == PackingStrategy::kBfd || lengths[r] <= L) {
          items.push_back({uint32_t(r), 0, std::min(lengths[r], L)});
        } else {
          for (uint32_t start = 0; start < lengths[r]; start += L)
            items.push_back({uint32_t(r), start, std::min(L, lengths[r] - start)});
        }
      }
      pack_bfd_batch(items, L, plan.rows);
    }
  }
  return plan;
}

PackedRow materialize_packed_row(const PackPlan& plan, size_t index,
                                 std::span<const TokenRow> rows) {
  PackedRow out;
  const auto& segments = plan.rows.at(index);
  for (const PackSegment& s : segments) {
    if (s.row >= rows.size() || s.start + uint64_t(s.length) > rows[s.row].input_ids.size() ||
        rows[s.row].labels.size() != rows[s.row].input_ids.size())
      fail("data", "packing plan does not match the rows it is applied to");
    const TokenRow& r = rows[s.row];
    out.input_ids.insert(out.input_ids.end(), r.input_ids.begin() + s.start,
                         r.input_ids.begin() + s.start + s.length);
    size_t first = out.labels.size();
    out.labels.insert(out.labels.end(), r.labels.begin() + s.start,
                      r.labels.begin() + s.start + s.length);
    if (plan.segments_are_documents) {
      out.labels[first] = kIgnoreLabel;
      out.doc_lengths.push_back(int32_t(s.length));
      for (uint32_t p = 0; p < s.length; ++p) out.position_ids.push_back(int32_t(p));
    }
  }
  if (!plan.segments_are_documents) {
    out.doc_lengths.push_back(int32_t(out.input_ids.size()));
    out.position_ids.resize(out.input_ids.size());
    std::iota(out.position_ids.begin(), out.position_ids.end(), 0);
  }
  return out;
}

}  // namespace sft::data
