// Micro-batch assembly: packed, padding-free and padded rows give the model what TRL's
// collator gives transformers, and padding changes neither the loss nor the target count.
#include "train/batch.h"

#include <gtest/gtest.h>

#include "memory_dataset.h"

namespace sft {
namespace {

using test::MemoryDataset;

TEST(Batch, PaddingFreeConcatenatesRowsAsDocuments) {
  MemoryDataset d;
  d.add({5, 6, 7}, {-100, 6, 7});
  d.add({8, 9}, {8, 9});
  const std::vector<uint64_t> rows = {1, 0};
  const MicroBatch mb = make_micro_batch(d, rows, {});
  EXPECT_EQ(mb.batch.tokens, (std::vector<int64_t>{8, 9, 5, 6, 7}));
  EXPECT_EQ(mb.batch.labels, (std::vector<int64_t>{8, 9, -100, 6, 7}));
  EXPECT_EQ(mb.batch.doc_lengths, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(mb.real_tokens, 5);
  EXPECT_EQ(mb.targets, 3);  // 9; 6, 7 — never a document's first label
}

TEST(Batch, PackedRowsKeepTheirDocuments) {
  MemoryDataset d;
  d.add({1, 2, 3, 4, 5}, {-100, 2, -100, 4, 5}, {2, 3});
  const std::vector<uint64_t> rows = {0};
  const MicroBatch mb = make_micro_batch(d, rows, {});
  EXPECT_EQ(mb.batch.doc_lengths, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(mb.targets, 3);
}

TEST(Batch, PaddedRowsArePaddedToTheLongestRoundedUp) {
  MemoryDataset d;
  d.add({5, 6, 7}, {-100, 6, 7});
  d.add({8, 9}, {8, 9});
  BatchOptions o;
  o.padding_free = false;
  o.pad_to_multiple_of = 4;
  o.pad_token_id = 0;
  const std::vector<uint64_t> rows = {0, 1};
  const MicroBatch mb = make_micro_batch(d, rows, o);
  EXPECT_EQ(mb.batch.tokens, (std::vector<int64_t>{5, 6, 7, 0, 8, 9, 0, 0}));
  EXPECT_EQ(mb.batch.labels, (std::vector<int64_t>{-100, 6, 7, -100, 8, 9, -100, -100}));
  EXPECT_EQ(mb.batch.doc_lengths, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(mb.real_tokens, 5);
  EXPECT_EQ(mb.targets, 3);
}

TEST(Batch, PaddingDoesNotChangeTheLoss) {
  model::Transformer m = model::Transformer::random(test::tiny_config(), 3);
  const MemoryDataset d = test::random_dataset(4, 48, 11);
  const std::vector<uint64_t> rows = {0, 1, 2, 3};
  BatchOptions padded;
  padded.padding_free = false;
  padded.pad_to_multiple_of = 8;
  const MicroBatch a = make_micro_batch(d, rows, {});
  const MicroBatch b = make_micro_batch(d, rows, padded);
  ASSERT_GT(b.batch.tokens.size(), a.batch.tokens.size());
  const model::LossStats la = m.forward(a.batch);
  const model::LossStats lb = m.forward(b.batch);
  EXPECT_EQ(la.count, a.targets);
  EXPECT_EQ(lb.count, b.targets);
  EXPECT_EQ(la.count, lb.count);
  EXPECT_NEAR(la.loss_sum, lb.loss_sum, 1e-4 * la.loss_sum);
  EXPECT_EQ(la.correct, lb.correct);
}

}  // namespace
}  // namespace sft
