// Broken and unsupported Parquet files (tools/make_parquet_negative_corpus.py): each gives
// its own clear "[parquet] <file>: ..." error, never a crash or a wrong row.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "data/parquet_reader.h"
#include "data/parquet_thrift.h"
#include "data_test_util.h"
#include "io/json.h"

namespace sft::data {
namespace {

TEST(ParquetNegative, EveryFileGivesItsError) {
  const std::string dir = sft::test::source_path("tests/fixtures/parquet_bad/");
  const Json manifest = read_json_file(dir + "MANIFEST.json", "test");
  ASSERT_GE(manifest.size(), 15u);
  for (auto it = manifest.begin(); it != manifest.end(); ++it) {
    SCOPED_TRACE(it.key());
    std::string message = test_util::error_of([&] {
      ParquetFile f = ParquetFile::open(dir + it.key());
      for (size_t g = 0; g < f.num_row_groups(); ++g) f.read_row_group(g);
    });
    EXPECT_THAT(message, ::testing::StartsWith("[parquet] " + dir + it.key() + ": "));
    EXPECT_THAT(message, ::testing::HasSubstr(it.value().get<std::string>()));
  }
}

}  // namespace
}  // namespace sft::data
