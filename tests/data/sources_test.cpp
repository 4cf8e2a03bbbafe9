// Dataset sources: files, globs, folders and Hub ids in the HF cache, in the Hub's layouts.
#include "data/sources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "data/row_reader.h"
#include "data_test_util.h"

namespace sft::data {
namespace {

namespace fs = std::filesystem;
using test_util::error_of;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;

DatasetSource src(const std::string& name, const std::string& config = "") {
  DatasetSource s;
  s.name = name;
  s.config = config;
  return s;
}

const std::string kFixtures = sft::test::source_path("tests/fixtures/parquet");

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "{\"text\": \"x\"}\n";
}

// A fake HF cache holding openai/gsm8k as huggingface_hub lays it out: main/{split}-*.parquet
// in the snapshot are relative symlinks into blobs/, whose names (etags) have no extension;
// refs/main holds the bare commit.
class HubCache : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = sft::test::fresh_output_dir("hub_cache");
    const fs::path repo = fs::path(cache_) / "datasets--openai--gsm8k";
    const std::string commit = "0123456789abcdef0123456789abcdef01234567";
    fs::create_directories(repo / "refs");
    std::ofstream(repo / "refs" / "main") << commit;
    fs::create_directories(repo / "blobs");
    fs::create_directories(repo / "snapshots" / commit / "main");
    int blob = 0;
    for (const auto& e : fs::directory_iterator(kFixtures + "/hub_gsm8k/main")) {
      const std::string etag =
          "e7a9" + std::to_string(blob++) + "0000000000000000000000000000000000";
      fs::copy_file(e.path(), repo / "blobs" / etag);
      fs::create_symlink("../../../blobs/" + etag,
                         repo / "snapshots" / commit / "main" / e.path().filename());
    }
    const char* old = std::getenv("HF_HUB_CACHE");
    saved_ = old ? std::optional<std::string>(old) : std::nullopt;
    setenv("HF_HUB_CACHE", cache_.c_str(), 1);
  }
  void TearDown() override {
    if (saved_) {
      setenv("HF_HUB_CACHE", saved_->c_str(), 1);
    } else {
      unsetenv("HF_HUB_CACHE");
    }
  }
  std::string cache_;
  std::optional<std::string> saved_;
};

TEST_F(HubCache, Gsm8kConfigAndSplits) {
  DatasetSource source = src("openai/gsm8k", "main");
  auto train = resolve_split_files(source, "train");
  EXPECT_THAT(train, ElementsAre(EndsWith("main/train-00000-of-00002.parquet"),
                                 EndsWith("main/train-00001-of-00002.parquet")));
  auto test = resolve_split_files(source, "test");
  EXPECT_THAT(test, ElementsAre(EndsWith("main/test-00000-of-00001.parquet")));
  RowErrors errors(false);
  EXPECT_EQ(read_all_rows(train, errors).size(), 22u);
  EXPECT_EQ(read_all_rows(test, errors).size(), 7u);
  EXPECT_FALSE(find_split_files(source, "validation").has_value());
  EXPECT_THAT(error_of([&] { resolve_split_files(source, "validation"); }),
              HasSubstr("has no split 'validation': looked for data files"));
  setenv("HF_HUB_OFFLINE", "1", 1);  // a miss must not reach for the network here
  EXPECT_THAT(error_of([&] { resolve_split_files(src("openai/gsm8k", "socratic"), "train"); }),
              HasSubstr("has no config 'socratic'"));
  EXPECT_THAT(error_of([&] { resolve_split_files(src("openai/nothing"), "train"); }),
              HasSubstr("[hub] dataset 'openai/nothing' is not a local folder"));
  unsetenv("HF_HUB_OFFLINE");
}

TEST(Sources, FolderLayouts) {
  const fs::path root = sft::test::fresh_output_dir("layouts");
  touch(root / "capybara/data/train-00000-of-00001.parquet.jsonl");  // data/{split}-*
  touch(root / "capybara/data/test-00000-of-00001.jsonl");
  touch(root / "flat/train.jsonl");  // {split}.jsonl
  touch(root / "flat/validation.jsonl");
  touch(root / "flat/.cache/train.jsonl");                    // hidden: ignored
  touch(root / "lone/my_rows.jsonl");                         // a lone file = train
  touch(root / "converted/default/train/0000.parquet.json");  // the Hub's parquet conversion
  auto train = resolve_split_files(src((root / "capybara").string()), "train");
  EXPECT_THAT(train, ElementsAre(EndsWith("data/train-00000-of-00001.parquet.jsonl")));
  EXPECT_THAT(resolve_split_files(src((root / "flat").string()), "train"),
              ElementsAre(EndsWith("flat/train.jsonl")));
  EXPECT_THAT(resolve_split_files(src((root / "flat").string()), "validation"),
              ElementsAre(EndsWith("flat/validation.jsonl")));
  EXPECT_THAT(resolve_split_files(src((root / "lone").string()), "train"),
              ElementsAre(EndsWith("lone/my_rows.jsonl")));
  EXPECT_FALSE(find_split_files(src((root / "lone").string()), "test").has_value());
  EXPECT_THAT(resolve_split_files(src((root / "converted").string()), "train"),
              ElementsAre(EndsWith("default/train/0000.parquet.json")));
}

TEST(Sources, FileAndGlob) {
  const std::string file = kFixtures + "/gsm8k_none_plain_v1.parquet";
  EXPECT_THAT(resolve_split_files(src(file), "train"), ElementsAre(file));
  EXPECT_FALSE(find_split_files(src(file), "test").has_value());
  EXPECT_THAT(error_of([&] { resolve_split_files(src(file), "test"); }),
              HasSubstr("a single file or a glob is the train split only"));
  auto files = resolve_split_files(src(kFixtures + "/gsm8k_*_dict_v1.parquet"), "train");
  EXPECT_THAT(files, ElementsAre(EndsWith("gsm8k_gzip_dict_v1.parquet"),
                                 EndsWith("gsm8k_none_dict_v1.parquet"),
                                 EndsWith("gsm8k_snappy_dict_v1.parquet"),
                                 EndsWith("gsm8k_zstd_dict_v1.parquet")));
  EXPECT_THAT(error_of([&] { resolve_split_files(src(kFixtures + "/nope_*.parquet"), "train"); }),
              HasSubstr("no .jsonl/.json/.parquet files match"));
}

// As datasets' data_files patterns: `*` stays within a folder, `**` crosses any number of them.
TEST(Sources, GlobStarStaysInItsFolder) {
  const fs::path root = sft::test::fresh_output_dir("globs");
  touch(root / "rows/a.jsonl");
  touch(root / "rows/extra/b.jsonl");
  touch(root / "rows/extra/deeper/c.jsonl");
  const std::string rows = (root / "rows").string();
  EXPECT_THAT(resolve_split_files(src(rows + "/*.jsonl"), "train"),
              ElementsAre(EndsWith("rows/a.jsonl")));
  EXPECT_THAT(resolve_split_files(src(rows + "/*/*.jsonl"), "train"),
              ElementsAre(EndsWith("rows/extra/b.jsonl")));
  EXPECT_THAT(resolve_split_files(src(rows + "/**/*.jsonl"), "train"),
              ElementsAre(EndsWith("rows/a.jsonl"), EndsWith("rows/extra/b.jsonl"),
                          EndsWith("rows/extra/deeper/c.jsonl")));
}

}  // namespace
}  // namespace sft::data
