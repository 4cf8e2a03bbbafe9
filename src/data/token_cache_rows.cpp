// RowStore (token_cache.h): rows in memory in the shard's layout.
#include "data/token_cache.h"

namespace sft::data {

void RowStore::append(const TokenRow& row, std::span<const int32_t> docs) {
  input_ids.insert(input_ids.end(), row.input_ids.begin(), row.input_ids.end());
  labels.insert(labels.end(), row.labels.begin(), row.labels.end());
  row_offsets.push_back(input_ids.size());
  if (docs.empty())
    doc_lengths.push_back(static_cast<int32_t>(row.input_ids.size()));
  else
    doc_lengths.insert(doc_lengths.end(), docs.begin(), docs.end());
  doc_offsets.push_back(doc_lengths.size());
}

TokenRow RowStore::row(size_t i) const {
  const uint64_t b = row_offsets[i], n = row_offsets[i + 1] - b;
  return {{input_ids.data() + b, n}, {labels.data() + b, n}};
}

std::span<const int32_t> RowStore::docs(size_t i) const {
  return {doc_lengths.data() + doc_offsets[i], doc_offsets[i + 1] - doc_offsets[i]};
}

void RowStore::clear() {
  *this = RowStore{};
}

}  // namespace sft::data
