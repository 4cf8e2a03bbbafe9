// From prepared dataset rows to the model's padding-free Batch, as TRL's collator would
// present them to transformers:
//
//   packed rows       each row already holds several documents; their lengths are carried
//                     over, so attention and positions restart per document (padding-free)
//   padding_free      unpacked rows are concatenated, each row one document
//   padded            every row is right-padded to the longest row of the micro-batch
//                     (rounded up to pad_to_multiple_of) with the pad id, pad positions
//                     labelled -100. A padded row is one "document" that ends in padding:
//                     attention is causal, so real tokens never see the pads and the loss,
//                     gradients and metrics equal the padding-free ones; only compute and
//                     the tokens counted in num_tokens differ (TRL counts the attention
//                     mask, i.e. real tokens only).
//
// The model scores position t against labels[t + 1] only inside a document, so the first
// label of a document is never a target: TRL's "-100 at position_ids == 0" (done for packed
// rows by pack.h) needs no counterpart here for padding-free rows.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "data/prepare.h"
#include "model/transformer.h"

namespace sft {

struct BatchOptions {
  bool padding_free = true;  // packed rows are always padding-free
  std::optional<int64_t> pad_to_multiple_of;
  int64_t pad_token_id = 0;
};

struct MicroBatch {
  model::Batch batch;
  int64_t rows = 0;
  int64_t real_tokens = 0;  // tokens that are not padding (TRL's num_tokens)
  int64_t targets = 0;      // scored positions: shifted labels != -100 inside a document
};

MicroBatch make_micro_batch(const data::PreparedDataset& dataset, std::span<const uint64_t> rows,
                            const BatchOptions& options);

// Positions the model scores in `batch` (what forward() returns as LossStats::count).
int64_t count_targets(const model::Batch& batch);

}  // namespace sft
