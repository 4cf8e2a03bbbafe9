// ZeRO-3's embedding lookup without the whole table: each rank fetches, from their owners, only
// the rows its batch looks up, writes them at their place in the (otherwise sharded) fp32
// arena for the lookup to read, and zeroes their non-own parts again after it. A micro-batch
// of T tokens moves at most T rows (Qwen3-0.6B, T = 256: 1 MB) where gathering the table moved
// all 151936 (622 MB, into pages faulted in afresh each step); the values are the owners', so
// the lookup reads the same bits.
//
// Collective: every rank calls fetch, with its own ids, for the same lookups. Three exchanges
// (Comm::all_to_all): how many distinct ids each rank wants, the ids, then from each owner
// the part of each wanted row inside its shard (a row may straddle two shards), in the
// requester's id order, so the requester knows where each part goes from the shard layout.
// Ids outside the table are not fetched (the lookup itself refuses them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "parallel/comm.h"

namespace sft {

class Zero3TableRows {
 public:
  // run: the table's run of the trainable arena, rows of `width` elements.
  Zero3TableRows(Comm& dp, ShardRange run, size_t width);

  // Rows `ids` of the table whole at their place in `values` (the whole-size fp32 arena).
  void fetch(std::span<float> values, std::span<const int64_t> ids);
  // The fetched rows' non-own parts zero again (their pages handed back where whole).
  void release(std::span<float> values);
  // The rows any rank fetched in the last fetch that meet arena range r, cut to r, in order
  // (a tied table's gradient rows that the lookup's gradient is still to be added to:
  // optim/zero3_head.h). The same on every rank.
  std::vector<ShardRange> any_fetched_in(ShardRange r) const;

 private:
  // The part of table row `id` inside `shard`, as a range of the arena (empty: none).
  ShardRange part_of(int64_t id, ShardRange shard) const;

  Comm& dp_;
  ShardRange run_;
  size_t width_;
  std::vector<int64_t> ids_;      // this rank's distinct ids of the last fetch, ascending
  std::vector<int64_t> any_ids_;  // every rank's, ascending, distinct
};

}  // namespace sft
