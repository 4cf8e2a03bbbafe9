// A view of some rows of a prepared dataset, and the --eval_split_ratio hold-out built from
// it: as datasets' train_test_split(test_size, seed), ceil(ratio · rows) rows drawn by a
// seeded permutation become the eval set, the rest stay for training (both kept in their
// original order). The hold-out is taken from the prepared rows (packed rows when packing).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "data/prepare.h"

namespace sft {

class SubsetDataset : public data::PreparedDataset {
 public:
  SubsetDataset(std::shared_ptr<const data::PreparedDataset> base, std::vector<size_t> rows)
      : base_(std::move(base)), rows_(std::move(rows)) {}
  size_t num_rows() const override { return rows_.size(); }
  data::TokenRow row(size_t i) const override { return base_->row(rows_.at(i)); }
  std::span<const int32_t> doc_lengths(size_t i) const override {
    return base_->doc_lengths(rows_.at(i));
  }
  const data::PrepareReport& report() const override { return base_->report(); }
  const std::string& fingerprint() const override { return base_->fingerprint(); }

 private:
  std::shared_ptr<const data::PreparedDataset> base_;
  std::vector<size_t> rows_;
};

// (train, eval); throws "[train] ..." when either side would be empty.
std::pair<std::shared_ptr<data::PreparedDataset>, std::shared_ptr<data::PreparedDataset>>
split_dataset(std::shared_ptr<const data::PreparedDataset> base, double eval_ratio, uint64_t seed);

}  // namespace sft
