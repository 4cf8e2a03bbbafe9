// Expert parallelism as the model sees it (--ep_size P, train/moe_args.h): the ranks of an
// expert-parallel group (core/expert_group.h) split every expert layer's E experts, rank q
// owning experts [q·E/P, (q+1)·E/P). Each rank routes its own tokens (router, top-k, the
// load-balancing loss: all local, as TRL computes them per process), then per layer:
//   forward:  the permuted rows (in expert order, so each owner's rows are one block) go to the
//             ranks owning their experts (counts first: rows per rank vary), the owner runs the
//             grouped GEMMs over the rows of its experts from every rank, and the results come
//             back to their token's rank, which combines them as without expert parallelism;
//   backward: the mirror — the combine's row gradients go to the owner, which accumulates its
//             experts' weight gradients and returns the rows' input gradients.
// On the owner an expert's rows are ordered by source rank, then as that rank sorted them, so
// a layout gives the same sums every run (deterministic; another layout sums in another order).
// Memory: every rank keeps the layout of a run without expert parallelism, but the blocks of
// experts a rank does not own are never read by its forward or backward and get no gradient or
// optimizer step there, so the trainer keeps them zero with their pages released
// (train/expert_shards.h): they cost address space, not memory. The owner's rows (xs, gate,
// up, h) live in per-layer arenas here, sized by the rows received (they grow to the largest
// seen, as the activation arena does); the layer's own activations then carve no gate, up or h
// (blocks/layer_shape.h's expert_rows_elsewhere).
// Host memory only (a device run is refused before any work).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/arena.h"
#include "core/expert_group.h"
#include "ops/moe.h"
#include "ops/view.h"

namespace sft::model {

// One expert layer's exchange for one forward and its backward (plan once, then move rows
// either way as often as needed).
class ExpertExchange {
 public:
  // From this rank's routing (offsets (E + 1) over its permuted rows, host memory): the rows
  // each rank sends here and receives from here (the per-expert counts are exchanged) and the
  // received rows' order by expert.
  void plan(ExpertGroup& group, std::span<const int64_t> offsets, int64_t first_expert,
            int64_t end_expert);
  // N: the rows this rank's experts received from the group (its own included).
  int64_t received_rows() const { return static_cast<int64_t>(by_expert_.size()); }
  // The received rows' routing over all E experts: the own experts' rows grouped by expert,
  // every other expert empty (what the grouped GEMMs read).
  ops::ExpertRouting routing() const;
  std::span<const int64_t> offsets() const { return offsets_; }
  // own (N, X) = the rows of `local` (R, X: this rank's permuted rows) that every rank sent to
  // this one, grouped by expert. staging: (N, X) of own's dtype, clobbered.
  void to_owners(ExpertGroup& group, ops::View own, ops::View local, ops::View staging) const;
  // The way back: local (R, X) = each of this rank's rows as its expert's owner computed it in
  // own (N, X). staging as above.
  void to_sources(ExpertGroup& group, ops::View local, ops::View own, ops::View staging) const;

 private:
  std::vector<size_t> send_rows_, recv_rows_;  // per rank
  std::vector<int64_t> offsets_;               // (E + 1) over the N received rows
  std::vector<int64_t> by_expert_;  // (N) expert-ordered row → its row in arrival order
  std::vector<int64_t> by_source_;  // (N) the inverse
};

struct ExpertParallel {
  ExpertGroup* group = nullptr;
  int64_t first_expert = 0, end_expert = 0;  // this rank's experts
  // Per expert layer: its exchange and the arena of the rows its experts keep for backward.
  struct Layer {
    ExpertExchange exchange;
    Arena rows;
  };
  std::vector<Layer> layers;  // indexed by decoder layer
  Arena scratch;              // one layer's transient rows at a time

  // Rank `group.rank()`'s share of `experts`, for `layers` decoder layers. Throws "[model] ..."
  // when the experts do not divide by the group's size.
  ExpertParallel(ExpertGroup& group, int64_t experts, int64_t layers);
};

}  // namespace sft::model
