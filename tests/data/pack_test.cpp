// Packing parity with TRL's pack_dataset (goldens from tools/make_packing_goldens.py): the
// same bins, in the same order, with the same seq_lengths, for every strategy; and the
// padding-free collator's labels and position_ids on a small case.
#include "data/pack.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "data_test_util.h"
#include "io/json.h"

namespace sft::data {
namespace {

Json goldens() {
  return read_json_file(sft::test::source_path("tests/fixtures/packing/goldens.json"), "test");
}

// The generator's synthetic rows: row i, token j → i*10000 + j; every 4th (i+j) untrained.
struct SyntheticRows {
  std::vector<std::vector<int32_t>> ids, labels;
  std::vector<TokenRow> rows;
  explicit SyntheticRows(const std::vector<uint32_t>& lengths) {
    for (size_t i = 0; i < lengths.size(); ++i) {
      ids.emplace_back();
      labels.emplace_back();
      for (uint32_t j = 0; j < lengths[i]; ++j) {
        int32_t id = int32_t(i * 10000 + j);
        ids.back().push_back(id);
        labels.back().push_back((i + j) % 4 == 0 ? kIgnoreLabel : id);
      }
    }
    for (size_t i = 0; i < lengths.size(); ++i) rows.push_back({ids[i], labels[i]});
  }
};

TEST(Pack, MatchesTrlPackDataset) {
  const Json g = goldens();
  const auto lengths = g["lengths"].get<std::vector<uint32_t>>();
  SyntheticRows data(lengths);
  ASSERT_EQ(g["cases"].size(), 7u);
  for (const Json& c : g["cases"]) {
    PackOptions options;
    options.strategy = parse_packing_strategy(c["strategy"]);
    options.max_length = c["max_length"];
    options.map_num_proc = c.value("map_num_proc", 1);
    SCOPED_TRACE(std::string(c["strategy"]) + " max_length " + std::to_string(options.max_length) +
                 " num_proc " + std::to_string(options.map_num_proc));
    PackPlan plan = plan_packing(lengths, options);
    ASSERT_EQ(plan.rows.size(), c["rows"].size());
    for (size_t r = 0; r < plan.rows.size(); ++r) {
      const Json& want = c["rows"][r];
      ASSERT_EQ(plan.rows[r].size(), want.size()) << "packed row " << r;
      for (size_t k = 0; k < want.size(); ++k) {
        PackSegment expected{want[k][0], want[k][1], want[k][2]};
        ASSERT_EQ(plan.rows[r][k], expected) << "packed row " << r << " segment " << k;
      }
      PackedRow row = materialize_packed_row(plan, r, data.rows);
      if (c.contains("seq_lengths")) {
        ASSERT_EQ(row.doc_lengths, c["seq_lengths"][r].get<std::vector<int32_t>>());
      } else {
        ASSERT_EQ(row.doc_lengths, std::vector<int32_t>{int32_t(row.input_ids.size())});
      }
      ASSERT_LE(row.input_ids.size(), options.max_length);
    }
  }
}

TEST(Pack, CollatedLabelsAndPositionsMatchTrl) {
  const Json small = goldens()["small"];
  const auto lengths = small["lengths"].get<std::vector<uint32_t>>();
  SyntheticRows data(lengths);
  PackOptions options;
  options.max_length = small["max_length"];
  PackPlan plan = plan_packing(lengths, options);
  ASSERT_EQ(plan.rows.size(), small["collated"].size());
  for (size_t r = 0; r < plan.rows.size(); ++r) {
    SCOPED_TRACE("packed row " + std::to_string(r));
    PackedRow row = materialize_packed_row(plan, r, data.rows);
    const Json& want = small["collated"][r];
    EXPECT_EQ(row.input_ids, want["input_ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(row.labels, want["labels"].get<std::vector<int32_t>>());
    EXPECT_EQ(row.position_ids, want["position_ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(row.doc_lengths, small["seq_lengths"][r].get<std::vector<int32_t>>());
  }
}

TEST(Pack, WrappedKeepsLabelsAndCountsOneDocument) {
  std::vector<uint32_t> lengths = {3, 4};
  SyntheticRows data(lengths);
  PackOptions options;
  options.strategy = PackingStrategy::kWrapped;
  options.max_length = 5;
  PackPlan plan = plan_packing(lengths, options);
  ASSERT_EQ(plan.rows.size(), 2u);
  PackedRow row = materialize_packed_row(plan, 0, data.rows);
  EXPECT_EQ(row.input_ids, (std::vector<int32_t>{0, 1, 2, 10000, 10001}));
  // Wrapped rows keep every label: TRL trains across document boundaries here.
  EXPECT_EQ(row.labels, (std::vector<int32_t>{-100, 1, 2, 10000, 10001}));
  EXPECT_EQ(row.position_ids, (std::vector<int32_t>{0, 1, 2, 3, 4}));
}

TEST(Pack, BadStrategyName) {
  EXPECT_THAT(test_util::error_of([] { parse_packing_strategy("ffd"); }),
              ::testing::HasSubstr("use bfd, bfd_split or wrapped"));
}

}  // namespace
}  // namespace sft::data
