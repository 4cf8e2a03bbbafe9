// The Parquet reader against files written by pyarrow (tools/make_parquet_fixtures.py):
// every codec x dictionary/plain x page v1/v2 must give exactly the rows pyarrow reads back.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "data/parquet_reader.h"
#include "data/parquet_thrift.h"
#include "test_paths.h"

namespace sft::data {
namespace {

// Ordered: the .jsonl lists keys in schema order, and == on RowJson compares key order too.
std::vector<RowJson> expected_rows(const std::string& name) {
  std::ifstream in(test::source_path("tests/fixtures/parquet/" + name + ".expected.jsonl"));
  std::vector<RowJson> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(RowJson::parse(line));
  return rows;
}

std::vector<RowJson> read_all(const std::string& path) {
  std::vector<RowJson> rows;
  ParquetFile f = ParquetFile::open(path);
  f.for_each_row([&](RowJson&& row, uint64_t index) {
    EXPECT_EQ(index, rows.size());
    rows.push_back(std::move(row));
  });
  return rows;
}

class ParquetFixtures : public ::testing::TestWithParam<std::string> {};

TEST_P(ParquetFixtures, MatchesPyarrowRowByRow) {
  const std::string dataset = GetParam();
  const std::vector<RowJson> expected = expected_rows(dataset);
  ASSERT_FALSE(expected.empty());
  int files = 0;
  for (const char* codec : {"none", "snappy", "gzip", "zstd"}) {
    for (const char* enc : {"dict", "plain"}) {
      for (const char* v : {"1", "2"}) {
        std::string name = dataset + "_" + codec + "_" + enc + "_v" + v + ".parquet";
        SCOPED_TRACE(name);
        ParquetFile f = ParquetFile::open(test::source_path("tests/fixtures/parquet/" + name));
        EXPECT_GT(f.num_row_groups(), 1u);  // row_group_size=10 in the generator
        std::vector<RowJson> rows = read_all(f.path());
        ASSERT_EQ(rows.size(), expected.size());
        for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(rows[i], expected[i]) << "row " << i;
        ++files;
      }
    }
  }
  EXPECT_EQ(files, 16);
}

INSTANTIATE_TEST_SUITE_P(Datasets, ParquetFixtures,
                         ::testing::Values("capybara", "gsm8k", "types"));

TEST(ParquetReader, SchemaSignatureDescribesTheShape) {
  ParquetFile f =
      ParquetFile::open(test::source_path("tests/fixtures/parquet/capybara_none_dict_v1.parquet"));
  EXPECT_EQ(f.schema_signature(),
            "source: string, messages: list<struct<content: string, role: string>>");
  ParquetFile other =
      ParquetFile::open(test::source_path("tests/fixtures/parquet/gsm8k_other_schema.parquet"));
  EXPECT_EQ(other.schema_signature(), "question: string, answer: string, extra: int64");
}

TEST(ParquetReader, NotParquetNamesTheFile) {
  const std::string path = test::source_path("tests/fixtures/parquet/capybara.expected.jsonl");
  try {
    ParquetFile::open(path);
    FAIL() << "no error";
  } catch (const ParquetError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sft::data
