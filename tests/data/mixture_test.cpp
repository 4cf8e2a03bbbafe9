// `--datasets` parsing and resolving (data/mixture.h): every mistake names the entry's index
// and field; unknown fields, partial fractions and split slicing are refused; entries resolve
// through the --dataset_name sources (file, glob, folder + data_dir, data_files lists and
// split mappings); columns select and order a row's keys; the cache key covers the mixture.
#include "data/mixture.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "data/prepare.h"
#include "data_test_util.h"
#include "io/options.h"

namespace sft::data {
namespace {

namespace fs = std::filesystem;

std::string usage_error_of(const std::string& json) {
  try {
    parse_mixture(Json::parse(json));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Mixture, ParsesEveryField) {
  const auto m = parse_mixture(Json::parse(R"([
    {"path": "org/data", "name": "cfg", "data_dir": "sub", "split": "test",
     "data_files": {"test": ["x.jsonl", "y.jsonl"], "train": "z.jsonl"},
     "columns": ["prompt", "completion"], "fraction": 0.25},
    {"path": "b.jsonl", "fraction": 0.75, "name": null, "columns": null}])"));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].path, "org/data");
  EXPECT_EQ(m[0].name, "cfg");
  EXPECT_EQ(m[0].data_dir, "sub");
  EXPECT_EQ(m[0].split, "test");
  ASSERT_EQ(m[0].data_files.size(), 2u);
  EXPECT_EQ(m[0].data_files[0].first, "test");
  EXPECT_EQ(m[0].data_files[0].second, (std::vector<std::string>{"x.jsonl", "y.jsonl"}));
  EXPECT_EQ(m[0].data_files[1].second, (std::vector<std::string>{"z.jsonl"}));
  EXPECT_EQ(*m[0].columns, (std::vector<std::string>{"prompt", "completion"}));
  EXPECT_EQ(*m[0].fraction, 0.25);
  EXPECT_EQ(m[1].split, "train");
  EXPECT_FALSE(m[1].columns.has_value());
}

TEST(Mixture, ErrorsNameTheEntryAndField) {
  EXPECT_EQ(usage_error_of(R"({"path": "a"})"),
            "[args] --datasets must be a list of datasets such as '[{\"path\": \"a.jsonl\"}]' (a "
            "`datasets:` list in the --config YAML)");
  EXPECT_EQ(usage_error_of(R"([{"path": "a"}, "b"])"),
            "[args] --datasets[1]: must be a mapping such as {\"path\": \"data.jsonl\"}, got "
            "string");
  EXPECT_EQ(usage_error_of(R"([{"name": "x"}])"), "[args] --datasets[0] path: is required");
  EXPECT_EQ(usage_error_of(R"([{"path": ""}])"), "[args] --datasets[0] path: must not be empty");
  EXPECT_EQ(usage_error_of(R"([{"path": 3}])"),
            "[args] --datasets[0] path: must be a string, got number");
  EXPECT_EQ(usage_error_of(R"([{"path": "a", "weight": 1}])"),
            "[args] --datasets[0] weight: unknown field (hint: a dataset takes path, name, "
            "data_dir, data_files, split, columns, fraction)");
  EXPECT_EQ(usage_error_of(R"([{"path": "a", "columns": [1]}])"),
            "[args] --datasets[0] columns: must be a list of strings, got a number");
  EXPECT_EQ(usage_error_of(R"([{"path": "a", "data_files": {"train": 2}}])"),
            "[args] --datasets[0] data_files.train: must be a string or a list of strings, got "
            "number");
  EXPECT_EQ(usage_error_of(R"([{"path": "a", "fraction": "half"}])"),
            "[args] --datasets[0] fraction: must be a number, got string");
  EXPECT_EQ(usage_error_of(R"([{"path": "a", "fraction": -0.5}])"),
            "[args] --datasets[0] fraction: must be a share >= 0, got -0.5");
  EXPECT_EQ(usage_error_of(R"([{"path": "a", "fraction": 0.5}, {"path": "b"}])"),
            "[args] --datasets[1] fraction: is not set while other entries set it (as in TRL, "
            "fraction must be set for all datasets of the mixture or none)");
  EXPECT_EQ(usage_error_of(R"([{"path": "a", "fraction": 0}, {"path": "b", "fraction": 0}])"),
            "[args] --datasets: the fractions sum to 0 (hint: give each dataset a share > 0)");
  EXPECT_NE(usage_error_of(R"([{"path": "a", "split": "train[:10%]"}])")
                .find("--datasets[0] split: 'train[:10%]': only a plain split name"),
            std::string::npos);
  EXPECT_EQ(usage_error_of(R"([{"path": "a"}, {"path": "b", "split": "test"}])"), "");
}

TEST(Mixture, EntriesResolveThroughTheDatasetSources) {
  const std::string dir = sft::test::fresh_output_dir("mixture_resolve");
  fs::create_directories(dir + "/folder/sub");
  fs::create_directories(dir + "/flat");
  for (const char* f : {"/one.jsonl", "/two.jsonl", "/flat/one.jsonl", "/flat/two.jsonl",
                        "/folder/sub/train.jsonl", "/folder/sub/test.jsonl", "/folder/other.jsonl"})
    std::ofstream(dir + f) << "{\"text\": \"x\"}\n";
  auto files = [&](const std::string& json) {
    return mixture_entry_files(parse_mixture(Json::parse(json)).at(0), 0);
  };
  EXPECT_EQ(files(R"([{"path": ")" + dir + R"(/one.jsonl"}])"),
            (std::vector<std::string>{dir + "/one.jsonl"}));
  EXPECT_EQ(files(R"([{"path": ")" + dir + R"(/flat/*.jsonl"}])"),
            (std::vector<std::string>{dir + "/flat/one.jsonl", dir + "/flat/two.jsonl"}));
  EXPECT_EQ(files(R"([{"path": ")" + dir + R"(/folder", "data_dir": "sub", "split": "test"}])"),
            (std::vector<std::string>{dir + "/folder/sub/test.jsonl"}));
  EXPECT_EQ(files(R"([{"path": ")" + dir + R"(/folder", "data_files": "other.jsonl"}])"),
            (std::vector<std::string>{dir + "/folder/other.jsonl"}));
  EXPECT_EQ(files(R"([{"path": "json", "data_dir": ")" + dir +
                  R"(", "data_files": {"validation": "two.jsonl"}, "split": "validation"}])"),
            (std::vector<std::string>{dir + "/two.jsonl"}));

  EXPECT_EQ(files(R"([{"path": "json", "data_dir": ")" + dir + R"(/folder/sub"}])"),
            (std::vector<std::string>{dir + "/folder/sub/train.jsonl"}));

  using test_util::error_of;
  EXPECT_EQ(
      error_of([&] { files(R"([{"path": "json"}])"); }),
      "[args] --datasets[0] path 'json' is a file format: it needs data_files or data_dir (hint: "
      "data_files: data/train.jsonl, or give the file itself as path)");
  EXPECT_EQ(
      error_of([&] { files(R"([{"path": "json", "data_files": ")" + dir + R"(/none.jsonl"}])"); }),
      "[data] --datasets[0] data_files: file not found: " + dir + "/none.jsonl");
  EXPECT_EQ(
      error_of([&] {
        files(R"([{"path": "json", "data_files": ")" + dir + R"(/one.jsonl", "split": "test"}])");
      }),
      "[data] --datasets[0] split 'test': data_files name only train (a string or list of "
      "data_files is the train split)");
  EXPECT_NE(error_of([&] {
              files(R"([{"path": ")" + dir + R"(/one.jsonl", "split": "test"}])");
            }).find("[data] --datasets[0]: "),
            std::string::npos);
  EXPECT_EQ(error_of([&] { files(R"([{"path": ")" + dir + R"(/folder", "data_dir": "nope"}])"); }),
            "[data] --datasets[0] data_dir: no folder " + dir + "/folder/nope");
}

// A Hub id in the HF cache (openai/gsm8k's parquet layout, as tests/data/sources_test.cpp):
// name is the config, split picks files, data_files are relative to the snapshot.
TEST(Mixture, HubIdsResolveFromTheCache) {
  const std::string cache = sft::test::fresh_output_dir("mixture_hub_cache");
  const fs::path repo = fs::path(cache) / "datasets--openai--gsm8k";
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / "main") << commit;
  fs::create_directories(repo / "snapshots" / commit / "main");
  for (const auto& e :
       fs::directory_iterator(sft::test::source_path("tests/fixtures/parquet/hub_gsm8k/main")))
    fs::copy_file(e.path(), repo / "snapshots" / commit / "main" / e.path().filename());
  const char* old = std::getenv("HF_HUB_CACHE");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  setenv("HF_HUB_CACHE", cache.c_str(), 1);
  const auto entries = parse_mixture(Json::parse(R"([
    {"path": "openai/gsm8k", "name": "main", "split": "test"},
    {"path": "openai/gsm8k", "data_files": "main/train-00001-of-00002.parquet"}])"));
  const auto test_files = mixture_entry_files(entries[0], 0);
  const auto train_files = mixture_entry_files(entries[1], 1);
  if (saved) {
    setenv("HF_HUB_CACHE", saved->c_str(), 1);
  } else {
    unsetenv("HF_HUB_CACHE");
  }
  ASSERT_EQ(test_files.size(), 1u);
  EXPECT_TRUE(test_files[0].ends_with("main/test-00000-of-00001.parquet")) << test_files[0];
  ASSERT_EQ(train_files.size(), 1u);
  EXPECT_TRUE(train_files[0].ends_with("main/train-00001-of-00002.parquet")) << train_files[0];
}

TEST(Mixture, ColumnsSelectAndOrderTheRowsKeys) {
  const std::string dir = sft::test::fresh_output_dir("mixture_columns");
  std::ofstream(dir + "/a.jsonl") << R"({"id": 1, "completion": "c", "prompt": "p"})"
                                     "\n";
  std::ofstream(dir + "/b.jsonl") << R"({"prompt": "q", "completion": "d", "x": 2})"
                                     "\n";
  std::vector<MixturePart> parts = {{{dir + "/a.jsonl"}, {{"prompt", "completion"}}, {}},
                                    {{dir + "/b.jsonl"}, {{"prompt", "completion"}}, {}}};
  RowErrors errors(false);
  std::vector<std::string> rows;
  read_mixture_rows(parts, errors,
                    [&](RowJson&& row, const RowRef&) { rows.push_back(row.dump()); });
  EXPECT_EQ(rows, (std::vector<std::string>{R"({"prompt":"p","completion":"c"})",
                                            R"({"prompt":"q","completion":"d"})"}));
  // Without columns, a later part's keys take the first part's order (concatenate_datasets).
  std::ofstream(dir + "/c.jsonl") << R"({"completion": "e", "prompt": "r"})"
                                     "\n";
  std::ofstream(dir + "/d.jsonl") << R"({"prompt": "s", "completion": "f"})"
                                     "\n";
  rows.clear();
  read_mixture_rows({{{dir + "/c.jsonl"}, {}, {}}, {{dir + "/d.jsonl"}, {}, {}}}, errors,
                    [&](RowJson&& row, const RowRef&) { rows.push_back(row.dump()); });
  EXPECT_EQ(rows, (std::vector<std::string>{R"({"completion":"e","prompt":"r"})",
                                            R"({"completion":"f","prompt":"s"})"}));

  using test_util::error_of;
  parts[1].columns = std::vector<std::string>{"prompt", "answer"};
  EXPECT_NE(error_of([&] { read_mixture_rows(parts, errors, [](RowJson&&, const RowRef&) {}); })
                .find("--datasets[1] columns: column 'answer' is not in the dataset (its "
                      "columns: prompt, completion, x)"),
            std::string::npos);
  parts[1].columns.reset();  // all of b's columns: not a's
  EXPECT_NE(error_of([&] { read_mixture_rows(parts, errors, [](RowJson&&, const RowRef&) {}); })
                .find("--datasets[1] has the columns [prompt, completion, x] but --datasets[0] "
                      "has [prompt, completion]"),
            std::string::npos);
}

TEST(Mixture, FingerprintCoversTheMixture) {
  PrepareOptions o;
  o.tokenizer_path = sft::test::source_path("tests/fixtures/prepare/cli/tokenizer");
  o.mixture = parse_mixture(Json::parse(R"([{"path": "a.jsonl", "fraction": 1},
                                            {"path": "b.jsonl", "fraction": 1}])"));
  const std::string fp = prepare_fingerprint(o, {});
  auto changed = [&](const std::string& json) {
    PrepareOptions c = o;
    c.mixture = parse_mixture(Json::parse(json));
    return prepare_fingerprint(c, {}) != fp;
  };
  EXPECT_FALSE(
      changed(R"([{"path": "a.jsonl", "fraction": 1}, {"path": "b.jsonl", "fraction": 1}])"));
  EXPECT_TRUE(
      changed(R"([{"path": "a.jsonl", "fraction": 1}, {"path": "b.jsonl", "fraction": 2}])"));
  EXPECT_TRUE(
      changed(R"([{"path": "b.jsonl", "fraction": 1}, {"path": "a.jsonl", "fraction": 1}])"));
  EXPECT_TRUE(changed(R"([{"path": "a.jsonl", "fraction": 1, "columns": ["text"]},
                          {"path": "b.jsonl", "fraction": 1}])"));
  EXPECT_TRUE(changed(R"([{"path": "a.jsonl"}, {"path": "b.jsonl"}])"));
  PrepareOptions single = o;
  single.mixture.clear();
  EXPECT_NE(prepare_fingerprint(single, {}), fp);
}

}  // namespace
}  // namespace sft::data
