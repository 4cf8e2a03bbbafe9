// Test helpers for the trainer: an in-memory PreparedDataset and a tiny random model.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/rng.h"
#include "data/prepare.h"
#include "model/config.h"
#include "model/transformer.h"

namespace sft::test {

class MemoryDataset : public data::PreparedDataset {
 public:
  struct Row {
    std::vector<int32_t> ids, labels, docs;
  };
  std::vector<Row> rows;

  size_t num_rows() const override { return rows.size(); }
  data::TokenRow row(size_t i) const override { return {rows[i].ids, rows[i].labels}; }
  std::span<const int32_t> doc_lengths(size_t i) const override { return rows[i].docs; }
  const data::PrepareReport& report() const override { return report_; }
  const std::string& fingerprint() const override { return fingerprint_; }

  void add(std::vector<int32_t> ids, std::vector<int32_t> labels, std::vector<int32_t> docs = {}) {
    if (docs.empty()) docs = {static_cast<int32_t>(ids.size())};
    rows.push_back({std::move(ids), std::move(labels), std::move(docs)});
  }

 private:
  data::PrepareReport report_;
  std::string fingerprint_ = "memory";
};

// `n` unpacked rows of 3..(3 + spread) tokens from a vocabulary of `vocab`; the first token of
// each row is a prompt token (label -100), the rest are trained.
inline MemoryDataset random_dataset(size_t n, int32_t vocab, uint64_t seed, int spread = 9) {
  MemoryDataset d;
  Rng rng(seed, 7);
  for (size_t i = 0; i < n; ++i) {
    const size_t len = 3 + rng.below(static_cast<uint64_t>(spread));
    std::vector<int32_t> ids, labels;
    for (size_t t = 0; t < len; ++t) {
      ids.push_back(static_cast<int32_t>(1 + rng.below(static_cast<uint64_t>(vocab - 1))));
      labels.push_back(t == 0 ? -100 : ids.back());
    }
    d.add(ids, labels);
  }
  return d;
}

inline ModelConfig tiny_config() {
  const Json j = {{"model_type", "llama"},
                  {"vocab_size", 48},
                  {"hidden_size", 16},
                  {"intermediate_size", 32},
                  {"num_hidden_layers", 2},
                  {"num_attention_heads", 2},
                  {"num_key_value_heads", 1},
                  {"head_dim", 8},
                  {"max_position_embeddings", 64},
                  {"rms_norm_eps", 1e-6},
                  {"tie_word_embeddings", false},
                  {"eos_token_id", 2}};
  return parse_model_config(j, "tiny");
}

}  // namespace sft::test
