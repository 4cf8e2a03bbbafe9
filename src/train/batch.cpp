#include "train/batch.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace sft {

MicroBatch make_micro_batch(const data::PreparedDataset& dataset, std::span<const uint64_t> rows,
                            const BatchOptions& options) {
  MicroBatch out;
  out.rows = static_cast<int64_t>(rows.size());
  int64_t padded_length = 0;
  if (!options.padding_free) {
    for (uint64_t r : rows)
      padded_length = std::max<int64_t>(padded_length, dataset.row(r).input_ids.size());
    const int64_t m = options.pad_to_multiple_of.value_or(1);
    if (m > 1) padded_length = (padded_length + m - 1) / m * m;
  }
  model::Batch& b = out.batch;
  for (uint64_t r : rows) {
    const data::TokenRow row = dataset.row(r);
    const std::span<const int32_t> docs = dataset.doc_lengths(r);
    int64_t doc_sum = 0;
    for (int32_t d : docs) doc_sum += d;
    if (doc_sum != static_cast<int64_t>(row.input_ids.size()) ||
        row.labels.size() != row.input_ids.size()) {
      fail("train", "prepared row " + std::to_string(r) +
                        " is inconsistent (document lengths or labels do not match its tokens; "
                        "hint: delete the dataset cache and prepare again)");
    }
    if (row.input_ids.empty()) continue;  // nothing to train on; TRL drops such rows
    b.tokens.insert(b.tokens.end(), row.input_ids.begin(), row.input_ids.end());
    b.labels.insert(b.labels.end(), row.labels.begin(), row.labels.end());
    for (int32_t d : docs)
      if (d > 0) b.doc_lengths.push_back(d);
    out.real_tokens += static_cast<int64_t>(row.input_ids.size());
    const int64_t pad = options.padding_free ? 0 : padded_length - doc_sum;
    b.padding.resize(b.tokens.size(), 0);
    if (pad > 0) {
      // The pads join the row's last document: causal attention keeps them invisible.
      b.padding.insert(b.padding.end(), pad, 1);
      b.tokens.insert(b.tokens.end(), pad, options.pad_token_id);
      b.labels.insert(b.labels.end(), pad, data::kIgnoreLabel);
      b.doc_lengths.back() += pad;
    }
  }
  out.targets = count_targets(b);
  return out;
}

int64_t count_targets(const model::Batch& batch) {
  if (batch.labels.empty()) return 0;
  int64_t count = 0, start = 0;
  auto count_doc = [&](int64_t begin, int64_t length) {
    for (int64_t t = begin + 1; t < begin + length; ++t)
      if (batch.labels[t] != data::kIgnoreLabel) ++count;
  };
  if (batch.doc_lengths.empty()) {
    count_doc(0, static_cast<int64_t>(batch.tokens.size()));
    return count;
  }
  for (int64_t d : batch.doc_lengths) {
    count_doc(start, d);
    start += d;
  }
  return count;
}

}  // namespace sft
