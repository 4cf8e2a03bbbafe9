// The middle of dataset preparation, independent of the tokenizer: examples from the split's
// files → encoded rows (in parallel, output in row order) → truncation and dropping of rows
// with no trained token (without packing) → packing (with packing) → the final rows, handed
// to a sink in order, and the PrepareReport's counts.
//
// TRL 1.16 (SFTTrainer._prepare_dataset) is the reference for what happens to a row:
//   - without packing and with max_length: input_ids/labels cut to [:max_length]
//     (keep_start) or [-max_length:] (keep_end), then rows whose labels are all -100 are
//     dropped (TRL filters only in this case; without max_length nothing is dropped)
//   - with packing: no truncation and no filter; pack.h packs with TRL's map batches
// prepare.cpp wires the real Encoder; tests pass any encode function.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "data/encode.h"
#include "data/prepare.h"

namespace sft {
class ThreadPool;
}

namespace sft::data {

using EncodeFn = std::function<EncodedRow(const Example&)>;
// Receives the final rows in order; docs = document lengths (one entry when not packed).
using FinalRowSink = std::function<void(const TokenRow& row, std::span<const int32_t> docs)>;

struct RowPipeline {
  EncodeFn encode;
  std::vector<int32_t> end_token_ids;  // EOS / end-of-turn ids for rows_training_eos
  ThreadPool* pool = nullptr;          // null = default_thread_pool()
  size_t batch_rows = 4096;            // examples encoded per parallel batch
};

// Runs the pipeline over `paths` as `options` says (format, truncation, packing, on_row,
// show_progress); fills everything in the report except from_cache and seconds.
PrepareReport prepare_rows(const std::vector<std::string>& paths, const PrepareOptions& options,
                           const RowPipeline& pipeline, const FinalRowSink& out);
// As above over rows from any source (a --datasets mixture); `estimated_rows` (0 = unknown)
// is the progress bar's total.
PrepareReport prepare_rows(const RowSource& rows, uint64_t estimated_rows,
                           const PrepareOptions& options, const RowPipeline& pipeline,
                           const FinalRowSink& out);

// Index of the power-of-two bucket of a row length: 0 for lengths 0 and 1, k for
// [2^k, 2^(k+1)).
size_t length_bucket(uint64_t length);

}  // namespace sft::data
