// A `--datasets` mixture against TRL 1.16 (tests/fixtures/mixture, written by
// tools/make_mixture_goldens.py): three conversational datasets in JSON Lines, a JSON array
// and Parquet, each reduced to `columns: [messages]` and mixed by `fraction`, prepared with
// assistant_only_loss and max_length 64 give exactly the rows of TRL's get_dataset +
// SFTTrainer._prepare_dataset, in order, unpacked and packed (bfd); TRL's fraction rule gives
// TRL's row counts.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "data/mixture.h"
#include "data/prepare.h"
#include "data_test_util.h"
#include "io/json.h"

namespace sft::data {
namespace {

const std::string kFixtures = "tests/fixtures/mixture";

Json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

// mixture.json with its data_files made absolute (TRL reads them from the fixture folder).
Json fixture_mixture() {
  const std::string dir = sft::test::source_path(kFixtures);
  Json mixture = read_json(dir + "/mixture.json");
  for (Json& entry : mixture) {
    Json& files = entry["data_files"];
    if (files.is_string()) files = dir + "/" + files.get<std::string>();
    if (files.is_array())
      for (Json& f : files) f = dir + "/" + f.get<std::string>();
    if (files.is_object())
      for (auto& [split, f] : files.items()) f = dir + "/" + f.get<std::string>();
  }
  return mixture;
}

PrepareOptions mixture_options() {
  PrepareOptions o;
  o.mixture = parse_mixture(fixture_mixture());
  o.tokenizer_path = sft::test::source_path("tests/fixtures/prepare/cli/tokenizer");
  o.encode.assistant_only_loss = true;
  o.max_length = 64;
  o.show_progress = false;
  return o;
}

TEST(MixtureParity, PreparedRowsAreTrls) {
  const auto prepared = prepare_dataset(mixture_options());
  std::ifstream expected(sft::test::source_path(kFixtures + "/expected_rows.jsonl"));
  std::string line;
  size_t i = 0;
  for (; std::getline(expected, line); ++i) {
    const Json row = Json::parse(line);
    ASSERT_LT(i, prepared->num_rows()) << "sft has fewer rows than TRL";
    const TokenRow got = prepared->row(i);
    EXPECT_EQ(std::vector<int32_t>(got.input_ids.begin(), got.input_ids.end()),
              row["input_ids"].get<std::vector<int32_t>>())
        << "row " << i;
    EXPECT_EQ(std::vector<int32_t>(got.labels.begin(), got.labels.end()),
              row["labels"].get<std::vector<int32_t>>())
        << "row " << i;
  }
  EXPECT_EQ(prepared->num_rows(), i);
  const Json counts = read_json(sft::test::source_path(kFixtures + "/expected.json"));
  EXPECT_EQ(prepared->report().rows_read, counts["mixture_rows"].get<uint64_t>());
  EXPECT_EQ(prepared->num_rows(), counts["prepared_rows"].get<uint64_t>());
}

// Packing runs over the concatenated rows (bfd to 64, TRL's default strategy).
TEST(MixtureParity, PackedRowsAreTrls) {
  PrepareOptions o = mixture_options();
  o.packing = true;
  o.pack.strategy = PackingStrategy::kBfd;
  const auto prepared = prepare_dataset(o);
  std::ifstream expected(sft::test::source_path(kFixtures + "/expected_packed.jsonl"));
  std::string line;
  size_t i = 0;
  for (; std::getline(expected, line); ++i) {
    const Json row = Json::parse(line);
    ASSERT_LT(i, prepared->num_rows()) << "sft has fewer packed rows than TRL";
    const TokenRow got = prepared->row(i);
    EXPECT_EQ(std::vector<int32_t>(got.input_ids.begin(), got.input_ids.end()),
              row["input_ids"].get<std::vector<int32_t>>())
        << "row " << i;
    const auto docs = prepared->doc_lengths(i);
    EXPECT_EQ(std::vector<int32_t>(docs.begin(), docs.end()),
              row["seq_lengths"].get<std::vector<int32_t>>())
        << "row " << i;
  }
  EXPECT_EQ(prepared->num_rows(), i);
}

TEST(MixtureParity, FractionRuleIsTrls) {
  const Json counts = read_json(sft::test::source_path(kFixtures + "/expected.json"));
  for (const Json& c : counts["take_cases"]) {
    SCOPED_TRACE(c.dump());
    EXPECT_EQ(mixture_take_counts(c["rows"].get<std::vector<uint64_t>>(),
                                  c["fractions"].get<std::vector<double>>()),
              c["take"].get<std::vector<uint64_t>>());
  }
}

TEST(MixtureParity, EntriesKeepTheirShareInOrder) {
  const std::vector<MixturePart> parts =
      resolve_mixture(parse_mixture(fixture_mixture()), /*skip_invalid_rows=*/false);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].take, 12u);
  EXPECT_EQ(parts[1].take, 5u);
  EXPECT_EQ(parts[2].take, 7u);
  RowErrors errors(false);
  std::vector<std::string> files;
  read_mixture_rows(parts, errors, [&](RowJson&& row, const RowRef& where) {
    ASSERT_EQ(row.size(), 1u);  // only `columns`
    ASSERT_TRUE(row.contains("messages"));
    files.push_back(*where.file);
  });
  ASSERT_EQ(files.size(), 24u);
  EXPECT_NE(files[11].find("a.jsonl"), std::string::npos);
  EXPECT_NE(files[12].find("b.json"), std::string::npos);
  EXPECT_NE(files[17].find("c.parquet"), std::string::npos);
}

}  // namespace
}  // namespace sft::data
