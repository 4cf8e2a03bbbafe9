// `--datasets` in the training arguments: a YAML `datasets:` list (as `trl sft --config`) or
// JSON on the command line; --dataset_name is then optional and ignored with a notice; a bad
// entry is a usage error naming it; the prepare options carry the parsed mixture.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "io/options.h"
#include "test_paths.h"
#include "train/args.h"
#include "train/data_options.h"
#include "train/preflight.h"

namespace sft {
namespace {

TEST(ArgsMixture, YamlListAsTrlWritesIt) {
  const std::string dir = sft::test::fresh_output_dir("args_mixture_yaml");
  const std::string config = dir + "/config.yaml";
  std::ofstream(config) << "model_name_or_path: m\n"
                           "output_dir: o\n"
                           "datasets:\n"
                           "  - path: json\n"
                           "    data_files: a.jsonl\n"
                           "    columns: [prompt, completion]\n"
                           "    fraction: 0.7\n"
                           "  - path: org/data\n"
                           "    name: cfg\n"
                           "    split: train\n"
                           "    fraction: 0.3\n";
  const TrainingArgs a = parse_training_args({"--config", config});
  EXPECT_TRUE(a.notices.empty());
  const data::PrepareOptions o = prepare_options_from_args(a, "tok", "");
  ASSERT_EQ(o.mixture.size(), 2u);
  EXPECT_EQ(o.mixture[0].path, "json");
  EXPECT_EQ(o.mixture[0].data_files.at(0).second, std::vector<std::string>{"a.jsonl"});
  EXPECT_EQ(*o.mixture[0].columns, (std::vector<std::string>{"prompt", "completion"}));
  EXPECT_DOUBLE_EQ(*o.mixture[1].fraction, 0.3);
  EXPECT_EQ(o.mixture[1].name, "cfg");
}

TEST(ArgsMixture, JsonOnTheCommandLineAndDatasetNameIgnored) {
  const TrainingArgs a =
      parse_training_args({"--model_name_or_path", "m", "--output_dir", "o", "--dataset_name", "d",
                           "--datasets", R"([{"path": "a.jsonl"}, {"path": "b.jsonl"}])"});
  ASSERT_EQ(a.notices.size(), 1u);
  EXPECT_EQ(a.notices[0], "--dataset_name d is ignored: --datasets is given (as in `trl sft`)");
  EXPECT_EQ(prepare_options_from_args(a, "tok", "").mixture.size(), 2u);
}

TEST(ArgsMixture, BadEntryIsAUsageError) {
  try {
    parse_training_args({"--model_name_or_path", "m", "--output_dir", "o", "--datasets",
                         R"([{"path": "a.jsonl"}, {"path": "b.jsonl", "frac": 1}])"});
    FAIL() << "an unknown field must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--datasets[1] frac: unknown field"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_training_args({"--model_name_or_path", "m", "--output_dir", "o"}),
               UsageError);  // neither --dataset_name nor --datasets
  const std::vector<std::string> eval = {
      "--model_name_or_path", "m",    "--output_dir", "o", "--datasets", R"([{"path": "a"}])",
      "--eval_strategy",      "steps"};
  try {
    parse_training_args(eval);
    FAIL() << "a mixture has no test split";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("a --datasets mixture has no test split"),
              std::string::npos)
        << e.what();
  }
  std::vector<std::string> with_split = eval;
  with_split.insert(with_split.end(), {"--test_split_size", "0.1"});
  EXPECT_NO_THROW(parse_training_args(with_split));
}

TEST(ArgsMixture, PreflightChecksEveryEntry) {
  TrainingArgs a;
  a.model_name_or_path = test::source_path("tests/fixtures/generate_text");
  a.output_dir = sft::test::fresh_output_dir("args_mixture_preflight") + "/out";
  const std::string good = test::source_path("tests/fixtures/mixture/a.jsonl");
  a.datasets = Json::parse(R"([{"path": ")" + good + R"("}, {"path": "data/missing.jsonl"}])");
  std::string error;
  try {
    preflight_train(a);
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("--datasets[1] path data/missing.jsonl: dataset file not found"),
            std::string::npos)
      << error;
  a.datasets[1]["path"] = good;
  EXPECT_NO_THROW(preflight_train(a));
}

}  // namespace
}  // namespace sft
