// prepare_rows against TRL 1.16's SFTTrainer._prepare_dataset on an already tokenized
// dataset (tools/make_prepare_goldens.py): truncation keep_start / keep_end with fully masked
// rows dropped, no max_length, and bfd / bfd_split (2 processes) / wrapped packing give
// TRL's rows in TRL's order, whatever the thread count and batch size.
#include "data/prepare_rows.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/thread_pool.h"
#include "data_test_util.h"
#include "io/json.h"

namespace sft::data {
namespace {

std::string fixture(const std::string& name) {
  return sft::test::source_path("tests/fixtures/prepare/" + name);
}

// The encoder for tokenized rows: ids as given, labels as given (all trained when absent).
EncodedRow identity_encode(const Example& example) {
  const auto& t = std::get<Tokenized>(example);
  EncodedRow row;
  row.input_ids = t.input_ids;
  row.labels = t.labels ? *t.labels : t.input_ids;
  return row;
}

struct Output {
  std::vector<std::vector<int32_t>> ids, labels, docs;
};

Output run(const PrepareOptions& options, PrepareReport* report, size_t threads, size_t batch) {
  ThreadPool pool(threads);
  RowPipeline pipeline;
  pipeline.encode = identity_encode;
  pipeline.pool = &pool;
  pipeline.batch_rows = batch;
  pipeline.end_token_ids = {7};
  Output out;
  *report = prepare_rows({fixture("tokenized.jsonl")}, options, pipeline,
                         [&](const TokenRow& row, std::span<const int32_t> docs) {
                           out.ids.emplace_back(row.input_ids.begin(), row.input_ids.end());
                           out.labels.emplace_back(row.labels.begin(), row.labels.end());
                           out.docs.emplace_back(docs.begin(), docs.end());
                         });
  return out;
}

PrepareOptions options_for(const Json& config) {
  PrepareOptions o;
  o.show_progress = false;
  o.max_length =
      config["max_length"].is_null() ? std::nullopt : std::optional<int64_t>(config["max_length"]);
  o.truncation_mode = config.value("truncation_mode", "keep_start");
  o.packing = config.value("packing", false);
  if (o.packing) o.pack.strategy = parse_packing_strategy(config.value("packing_strategy", "bfd"));
  o.pack.map_num_proc = config.value("dataset_num_proc", 1);
  return o;
}

// Rows of the fixture dataset longer than max_length tokens.
uint64_t rows_longer_than(int64_t max_length) {
  std::ifstream in(fixture("tokenized.jsonl"));
  uint64_t n = 0;
  for (std::string line; std::getline(in, line);)
    n += int64_t(Json::parse(line)["input_ids"].size()) > max_length;
  return n;
}

class PrepareRowsGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(PrepareRowsGolden, MatchesTrl) {
  static const Json goldens = read_json_file(fixture("goldens.json"), "test");
  const Json& want = goldens.at(GetParam());
  const PrepareOptions options = options_for(want["config"]);
  const auto want_ids = want["input_ids"].get<std::vector<std::vector<int32_t>>>();
  auto want_labels = want["labels"].get<std::vector<std::vector<int32_t>>>();
  const bool documents = options.packing && options.pack.strategy != PackingStrategy::kWrapped;
  if (documents) {
    // TRL's padding-free collator masks every document's first label (pack.h does it here).
    const auto seqs = want["seq_lengths"].get<std::vector<std::vector<int32_t>>>();
    for (size_t r = 0; r < seqs.size(); ++r)
      for (size_t d = 0, at = 0; d < seqs[r].size(); at += seqs[r][d++]) want_labels[r][at] = -100;
  }
  for (auto [threads, batch] : {std::pair<size_t, size_t>{1, 4096}, {3, 50}}) {
    SCOPED_TRACE("threads " + std::to_string(threads) + ", batch " + std::to_string(batch));
    PrepareReport report;
    const Output got = run(options, &report, threads, batch);
    ASSERT_EQ(got.ids.size(), want_ids.size());
    for (size_t r = 0; r < want_ids.size(); ++r) {
      ASSERT_EQ(got.ids[r], want_ids[r]) << "row " << r;
      ASSERT_EQ(got.labels[r], want_labels[r]) << "row " << r;
      if (documents)
        ASSERT_EQ(got.docs[r], want["seq_lengths"][r].get<std::vector<int32_t>>()) << "row " << r;
      else
        ASSERT_EQ(got.docs[r], std::vector<int32_t>{int32_t(got.ids[r].size())}) << "row " << r;
    }
    EXPECT_EQ(report.rows_read, 1100u);
    EXPECT_EQ(report.format, "tokenized");
    uint64_t dropped = 0;
    for (const auto& [reason, n] : report.rows_dropped) dropped += n;
    EXPECT_EQ(report.rows_kept + dropped, report.rows_read);
    if (options.packing)
      EXPECT_EQ(report.packed_rows, want_ids.size());
    else
      EXPECT_EQ(report.rows_kept, want_ids.size());
    uint64_t tokens = 0, trained = 0;
    for (size_t r = 0; r < want_ids.size(); ++r) {
      tokens += want_ids[r].size();
      for (int32_t l : want_labels[r]) trained += l != -100;
    }
    EXPECT_EQ(report.output_tokens, tokens);
    EXPECT_EQ(report.trained_tokens, trained);
    if (options.packing) {
      // What the audit says packing cut is what TRL's packed rows lack of the dataset; bfd
      // cuts every row longer than max_length, bfd_split and wrapped none.
      EXPECT_EQ(report.tokens - report.tokens_truncated, tokens);
      const bool cuts = options.pack.strategy == PackingStrategy::kBfd;
      EXPECT_EQ(report.rows_truncated, cuts ? rows_longer_than(*options.max_length) : 0u);
      EXPECT_EQ(report.tokens_truncated > 0, cuts);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Trl, PrepareRowsGolden,
                         ::testing::Values("keep_start_16", "keep_end_16", "no_max_length",
                                           "bfd_32", "bfd_split_32_proc2", "wrapped_24"));

// Counts checked by hand on a four-row dataset.
TEST(PrepareRows, ReportCounts) {
  const std::string path = test_util::write_file(
      "prepare_rows_counts", "d.jsonl",
      "{\"input_ids\": [1, 2, 3, 4, 5, 7], \"labels\": [-100, -100, -100, 4, 5, 7]}\n"
      "{\"input_ids\": [1, 2, 3], \"labels\": [-100, -100, 3]}\n"
      "{\"input_ids\": [9, 9, 9, 9, 9], \"labels\": [-100, -100, -100, -100, 9]}\n"
      "{\"input_ids\": [7]}\n");
  PrepareOptions o;
  o.show_progress = false;
  o.max_length = 4;
  RowPipeline p;
  p.encode = identity_encode;
  p.end_token_ids = {7};
  size_t rows = 0;
  PrepareReport r = prepare_rows({path}, o, p, [&](const TokenRow&, auto) { ++rows; });
  EXPECT_EQ(rows, 3u);
  EXPECT_EQ(r.rows_read, 4u);
  EXPECT_EQ(r.rows_kept, 3u);
  EXPECT_EQ(r.rows_dropped, (std::map<std::string, uint64_t>{{"no_trained_tokens", 1}}));
  EXPECT_EQ(r.rows_truncated, 2u);
  EXPECT_EQ(r.tokens_truncated, 2u + 1u);
  EXPECT_EQ(r.tokens, 15u);
  EXPECT_EQ(r.output_tokens, 4u + 3u + 1u);
  EXPECT_EQ(r.trained_tokens, 1u + 1u + 1u);
  EXPECT_EQ(r.rows_training_eos, 1u);  // the last row; row 0's 7 was cut off
  EXPECT_EQ(r.length_histogram, (std::vector<uint64_t>{1, 1, 1}));
  EXPECT_EQ(length_bucket(0), 0u);
  EXPECT_EQ(length_bucket(1), 0u);
  EXPECT_EQ(length_bucket(2), 1u);
  EXPECT_EQ(length_bucket(1023), 9u);
  EXPECT_EQ(length_bucket(1024), 10u);

  const PrepareReport back = PrepareReport::from_json(r.to_json());
  EXPECT_EQ(back.to_json(), r.to_json());
  const std::string text = r.to_text();
  EXPECT_NE(text.find("4 read, 3 kept, 1 dropped (1 no_trained_tokens)"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find("truncated rows:      2 (50.0% of rows read), 3 tokens cut (20.0% of encoded"),
      std::string::npos)
      << text;
}

// With packing the audit counts what packing cuts and which end tokens the final rows train,
// checked by hand per strategy on four rows (end token 7; max_length 4).
TEST(PrepareRows, PackedReportCounts) {
  const std::string path = test_util::write_file(
      "prepare_rows_packed_counts", "d.jsonl",
      // 6 tokens: bfd cuts it to 4 (its 7 lost); bfd_split's second piece [5, 7] trains the 7.
      "{\"input_ids\": [1, 2, 3, 4, 5, 7], \"labels\": [-100, -100, -100, 4, 5, 7]}\n"
      "{\"input_ids\": [1, 2, 3], \"labels\": [-100, -100, 3]}\n"
      // A lone 7 is a document's first token, whose label packing masks (not in wrapped).
      "{\"input_ids\": [7]}\n"
      "{\"input_ids\": [5, 7]}\n");
  struct Want {
    const char* strategy;
    uint64_t rows_truncated, tokens_truncated, rows_training_eos, output_tokens;
  };
  for (const Want& want :
       {Want{"bfd", 1, 2, 1, 10}, Want{"bfd_split", 0, 0, 2, 12}, Want{"wrapped", 0, 0, 3, 12}}) {
    SCOPED_TRACE(want.strategy);
    PrepareOptions o;
    o.show_progress = false;
    o.max_length = 4;
    o.packing = true;
    o.pack.strategy = parse_packing_strategy(want.strategy);
    RowPipeline p;
    p.encode = identity_encode;
    p.end_token_ids = {7};
    PrepareReport r = prepare_rows({path}, o, p, [](const TokenRow&, auto) {});
    EXPECT_EQ(r.rows_kept, 4u);
    EXPECT_EQ(r.tokens, 12u);
    EXPECT_EQ(r.rows_truncated, want.rows_truncated);
    EXPECT_EQ(r.tokens_truncated, want.tokens_truncated);
    EXPECT_EQ(r.rows_training_eos, want.rows_training_eos);
    EXPECT_EQ(r.output_tokens, want.output_tokens);
    EXPECT_EQ(PrepareReport::from_json(r.to_json()).to_json(), r.to_json());
  }
}

TEST(PrepareRows, EncodeErrorsNameTheRowOrAreCounted) {
  const std::string path = test_util::write_file("prepare_rows_errors", "d.jsonl",
                                                 "{\"input_ids\": [1]}\n{\"input_ids\": [2]}\n");
  PrepareOptions o;
  o.show_progress = false;
  RowPipeline p;
  p.encode = [](const Example& e) {
    if (std::get<Tokenized>(e).input_ids[0] == 2) fail("data", "no assistant tokens");
    return identity_encode(e);
  };
  auto sink = [](const TokenRow&, auto) {};
  const std::string err = test_util::error_of([&] { prepare_rows({path}, o, p, sink); });
  EXPECT_NE(err.find(path + ": line 2: no assistant tokens"), std::string::npos) << err;
  o.skip_invalid_rows = true;
  const PrepareReport r = prepare_rows({path}, o, p, sink);
  EXPECT_EQ(r.rows_kept, 1u);
  EXPECT_EQ(r.rows_dropped.at("encode_error"), 1u);
}

// Rows the reader skipped (here: a line that is not JSON) count as read and dropped under
// their problem's name, next to the encoder's drops.
TEST(PrepareRows, SkippedInvalidRowsCountAsReadAndDropped) {
  const std::string path =
      test_util::write_file("prepare_rows_invalid", "d.jsonl",
                            "{\"input_ids\": [1, 2]}\nnot json\n{\"input_ids\": [3]}\n");
  PrepareOptions o;
  o.show_progress = false;
  o.skip_invalid_rows = true;
  RowPipeline p;
  p.encode = identity_encode;
  size_t rows = 0;
  const PrepareReport r = prepare_rows({path}, o, p, [&](const TokenRow&, auto) { ++rows; });
  EXPECT_EQ(rows, 2u);
  EXPECT_EQ(r.rows_read, 3u);
  EXPECT_EQ(r.rows_kept, 2u);
  EXPECT_EQ(r.rows_dropped, (std::map<std::string, uint64_t>{{"not_json", 1}}));
  EXPECT_EQ(r.tokens, 3u);
}

TEST(PrepareRows, RejectsBadOptions) {
  PrepareOptions o;
  o.show_progress = false;
  RowPipeline p;
  p.encode = identity_encode;
  auto sink = [](const TokenRow&, auto) {};
  o.truncation_mode = "middle";
  EXPECT_NE(test_util::error_of([&] { prepare_rows({}, o, p, sink); }).find("truncation_mode"),
            std::string::npos);
  o.truncation_mode = "keep_start";
  o.packing = true;
  o.max_length = std::nullopt;
  EXPECT_NE(test_util::error_of([&] { prepare_rows({}, o, p, sink); }).find("packing needs"),
            std::string::npos);
}

}  // namespace
}  // namespace sft::data
