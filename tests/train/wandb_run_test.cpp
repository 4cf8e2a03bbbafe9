// `--report_to wandb`: the offline run folder, the settings from the environment, the config,
// and the record sequence compared with what TRL's SFTTrainer + the wandb SDK wrote for the
// same kind of run (tests/fixtures/wandb/trl_sft.wandb, tools/make_wandb_goldens.py).
#include "train/wandb_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>

#include "test_paths.h"
#include "train/args.h"
#include "train/wandb_config.h"
#include "wandb_test_reader.h"

namespace sft {

namespace {

namespace fs = std::filesystem;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> records_of(const std::string& path) {
  std::string error;
  const auto records =
      test::join_wandb_records(test::read_wandb_chunks(read_bytes(path), &error), &error);
  EXPECT_EQ(error, "") << path;
  return records;
}

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

// What a record is, as the golden comparison sees it: its kind, and for history/summary/
// config the keys (wandb-core's own runtime summaries and the records sft does not write
// are dropped).
struct Seen {
  std::string kind;
  std::set<std::string> keys;
  std::map<std::string, std::string> values;
};

std::vector<Seen> digest(const std::vector<std::string>& records) {
  static const std::map<uint32_t, std::string> kKinds = {
      {2, "history"}, {3, "summary"}, {5, "config"}, {12, "metric"},
      {17, "run"},    {18, "exit"},   {21, "header"}};
  std::vector<Seen> out;
  for (const std::string& raw : records) {
    const auto body = test::record_body(test::parse_proto(raw));
    if (!body || !kKinds.count(body->number)) continue;
    Seen s{kKinds.at(body->number), {}, {}};
    if (body->number == 2 || body->number == 3 || body->number == 5)
      for (const auto& [k, v] : test::record_items(body->bytes)) {
        s.keys.insert(k);
        s.values[k] = v;
      }
    if (s.kind == "summary" && (s.keys.count("_wandb.runtime") || s.keys.empty())) continue;
    out.push_back(s);
  }
  return out;
}

// The log events `sft train` hands MetricsLog for the golden's run (4 steps, logging_steps 1,
// an eval at step 4): the golden's values, with sft's three speed keys.
std::vector<Json> sft_events() {
  std::vector<Json> events;
  for (int step = 1; step <= 4; ++step)
    events.push_back({{"loss", 6.5 - 0.1 * step},
                      {"grad_norm", 2.0},
                      {"learning_rate", 1e-3},
                      {"entropy", 6.5},
                      {"num_tokens", 100.0 * step},
                      {"mean_token_accuracy", 0.01},
                      {"epoch", step / 21.0},
                      {"step", step},
                      {"tokens_per_second", 1000.0},
                      {"step_time_s", 0.05},
                      {"gflops", 1.0}});
  events.push_back({{"eval_loss", 6.2},
                    {"eval_runtime", 0.03},
                    {"eval_samples_per_second", 200.0},
                    {"eval_steps_per_second", 40.0},
                    {"eval_entropy", 6.5},
                    {"eval_num_tokens", 400.0},
                    {"eval_mean_token_accuracy", 0.03},
                    {"epoch", 4 / 21.0},
                    {"step", 4}});
  events.push_back({{"train_runtime", 0.6},
                    {"train_samples_per_second", 13.0},
                    {"train_steps_per_second", 6.5},
                    {"total_flos", 2.5e8},
                    {"train_loss", 6.4},
                    {"epoch", 4 / 21.0},
                    {"step", 4}});
  return events;
}

// The golden's SFTConfig, as `sft train` flags.
TrainingArgs golden_args() {
  return parse_training_args({"--model_name_or_path",
                              "tests/fixtures/trl_parity/model",
                              "--dataset_name",
                              "tests/fixtures/trl_parity/data.jsonl",
                              "--output_dir",
                              "/tmp/tiny-sft",
                              "--max_steps",
                              "4",
                              "--logging_steps",
                              "1",
                              "--per_device_train_batch_size",
                              "2",
                              "--max_length",
                              "128",
                              "--learning_rate",
                              "1e-3",
                              "--seed",
                              "42",
                              "--bf16",
                              "false",
                              "--report_to",
                              "wandb",
                              "--eval_strategy",
                              "steps",
                              "--eval_steps",
                              "4",
                              "--save_strategy",
                              "steps",
                              "--save_steps",
                              "4",
                              "--run_name",
                              "tiny-sft",
                              "--disable_tqdm",
                              "true"});
}

struct Written {
  std::string dir, run_dir, file;
};

Written write_run(const std::string& name, const std::vector<Json>& events, bool throw_midway) {
  Written w;
  w.dir = test::fresh_output_dir(name);
  const WandbSettings s =
      wandb_settings_from_env("tiny-sft", env_of({{"WANDB_DIR", w.dir},
                                                  {"WANDB_PROJECT", "sft-golden"},
                                                  {"WANDB_RUN_ID", "sftrun01"},
                                                  {"WANDB_TAGS", "a, b"}}));
  const TrainingArgs args = golden_args();
  const Json config = wandb_run_config(
      read_json_file(test::source_path("tests/fixtures/trl_parity/model/config.json"), "test"),
      args);
  try {
    WandbRun run(s, config, 119040, 1796120439.25);
    w.run_dir = run.run_dir();
    run.output("training: 4 steps", 1796120439.5);
    double t = 1796120440.0;
    for (const Json& e : events) run.log(e, t += 0.25);
    if (throw_midway) throw std::runtime_error("boom");
    run.finish(0, t + 1);
  } catch (const std::runtime_error&) {
  }
  w.file = w.run_dir + "/run-sftrun01.wandb";
  return w;
}

}  // namespace

TEST(WandbSettings, FromTheEnvironment) {
  WandbSettings s = wandb_settings_from_env(std::nullopt, env_of({{"WANDB_DIR", "/x"}}));
  EXPECT_EQ(s.mode, "offline");
  EXPECT_EQ(s.dir, "/x");
  EXPECT_EQ(s.project, "huggingface");  // WandbCallback's default
  EXPECT_EQ(s.name, "");
  ASSERT_EQ(s.run_id.size(), 8u);
  for (char c : s.run_id) EXPECT_TRUE(std::isdigit(c) || std::islower(c)) << s.run_id;

  s = wandb_settings_from_env("from-flag", env_of({{"WANDB_NAME", "from-env"},
                                                   {"WANDB_PROJECT", "p"},
                                                   {"WANDB_RUN_ID", "abc"},
                                                   {"WANDB_MODE", "online"},
                                                   {"WANDB_TAGS", "x, y,,z"},
                                                   {"WANDB_ENTITY", "team"}}));
  EXPECT_EQ(s.name, "from-flag");  // --run_name wins, as WandbCallback passes it to init
  EXPECT_EQ(s.project, "p");
  EXPECT_EQ(s.run_id, "abc");
  EXPECT_EQ(s.mode, "online");
  EXPECT_EQ(s.entity, "team");
  EXPECT_EQ(s.tags, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(wandb_settings_from_env(std::nullopt, env_of({{"WANDB_NAME", "n"}})).name, "n");
  EXPECT_EQ(wandb_settings_from_env(std::nullopt, env_of({{"WANDB_MODE", "dryrun"}})).mode,
            "offline");
  EXPECT_EQ(wandb_settings_from_env(std::nullopt, env_of({{"WANDB_MODE", "disabled"}})).mode,
            "disabled");
  EXPECT_EQ(wandb_settings_from_env(std::nullopt, env_of({{"WANDB_DISABLED", "true"}})).mode,
            "disabled");
  try {
    wandb_settings_from_env(std::nullopt, env_of({{"WANDB_MODE", "cloud"}}));
    FAIL() << "an unknown WANDB_MODE must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("WANDB_MODE=cloud"), std::string::npos);
  }
}

TEST(WandbArgs, ReportToAcceptsWandbAndRefusesTrackioClearly) {
  TrainingArgs a = golden_args();
  EXPECT_EQ(a.report_to, std::vector<std::string>{"wandb"});
  try {
    parse_training_args({"--model_name_or_path", "m", "--dataset_name", "d", "--output_dir", "o",
                         "--report_to", "trackio"});
    FAIL() << "trackio must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--report_to wandb"), std::string::npos) << e.what();
  }
}

TEST(WandbConfig, EveryOptionUnderItsFlagName) {
  TrainingArgs a = golden_args();
  const Json j = training_args_json(a);
  const std::string help = training_options(a).help();
  size_t count = 0;
  for (size_t p = help.find("\n  --"); p != std::string::npos; p = help.find("\n  --", p + 1)) {
    const std::string name = help.substr(p + 5, help.find(' ', p + 5) - p - 5);
    EXPECT_TRUE(j.contains(name)) << name;
    ++count;
  }
  EXPECT_GT(count, 60u);
  EXPECT_EQ(j["learning_rate"].get<double>(), 1e-3);
  EXPECT_EQ(j["report_to"], Json::array({"wandb"}));
  EXPECT_TRUE(j["data_seed"].is_null());
  EXPECT_EQ(j["bf16"], false);
}

TEST(WandbRun, WritesTheOfflineRunFolder) {
  const Written w = write_run("wandb_run_folder", sft_events(), false);
  EXPECT_EQ(fs::path(w.run_dir).parent_path(), fs::path(w.dir) / "wandb");
  EXPECT_EQ(fs::path(w.run_dir).filename().string().rfind("offline-run-", 0), 0u);
  EXPECT_NE(w.run_dir.find("-sftrun01"), std::string::npos);
  EXPECT_TRUE(fs::is_directory(w.run_dir + "/files"));
  EXPECT_TRUE(fs::is_regular_file(w.file));
  const fs::path latest = fs::path(w.dir) / "wandb" / "latest-run";
  ASSERT_TRUE(fs::is_symlink(latest));
  EXPECT_EQ(fs::read_symlink(latest), fs::path(w.run_dir).filename());

  const auto records = records_of(w.file);
  ASSERT_GT(records.size(), 10u);
  // Record.num counts from 1.
  for (size_t i = 0; i < records.size(); ++i)
    EXPECT_EQ(test::find_field(test::parse_proto(records[i]), 1)->varint, i + 1);
  const auto run = test::parse_proto(test::record_body(test::parse_proto(records[1]))->bytes);
  EXPECT_EQ(test::find_field(run, 1)->bytes, "sftrun01");
  EXPECT_EQ(test::find_field(run, 3)->bytes, "sft-golden");
  EXPECT_EQ(test::find_field(run, 8)->bytes, "tiny-sft");
  std::vector<std::string> tags;
  for (const auto& f : run)
    if (f.number == 10) tags.push_back(f.bytes);
  EXPECT_EQ(tags, (std::vector<std::string>{"a", "b"}));
  const auto exit = test::parse_proto(test::record_body(test::parse_proto(records.back()))->bytes);
  EXPECT_EQ(test::record_body(test::parse_proto(records.back()))->number, 18u);
  EXPECT_FALSE(test::find_field(exit, 1).has_value());  // exit_code 0
  EXPECT_EQ(test::find_field(exit, 2)->varint, 3u);     // runtime, seconds
}

// files/ holds what the SDK leaves there: the config as W&B's config.yaml, the run's metadata,
// the console lines and, once finished, the summary.
TEST(WandbRun, FilesFolderHoldsConfigMetadataOutputAndSummary) {
  const Written w = write_run("wandb_run_files", sft_events(), false);
  const std::string files = w.run_dir + "/files/";
  const std::string yaml = read_bytes(files + "config.yaml");
  EXPECT_EQ(yaml.rfind("_wandb:\n  value: {}\n", 0), 0u) << yaml;
  for (const char* entry :
       {"\nlearning_rate:\n  value: 0.001\n", "\nmax_steps:\n  value: 4\n",
        "\nreport_to:\n  value: [\"wandb\"]\n", "\nrun_name:\n  value: \"tiny-sft\"\n",
        "\nmodel/num_parameters:\n  value: 119040\n", "\ninclude_for_metrics:\n  value: []\n",
        "\ndata_seed:\n  value: null\n"})
    EXPECT_NE(yaml.find(entry), std::string::npos) << entry << "\n" << yaml;
  // YAML 1.1 floats need a decimal point: 1e-08 would read back as a string.
  EXPECT_NE(yaml.find("\nadam_epsilon:\n  value: 1.0e-08\n"), std::string::npos) << yaml;

  const Json meta = Json::parse(read_bytes(files + "wandb-metadata.json"));
  EXPECT_EQ(meta.at("program"), "sft train");
  EXPECT_EQ(meta.at("startedAt"), "2026-12-01T10:20:39.250000Z");
  EXPECT_TRUE(meta.at("memory").at("total").is_string());

  EXPECT_EQ(read_bytes(files + "output.log"), "training: 4 steps\n");

  const Json summary = Json::parse(read_bytes(files + "wandb-summary.json"));
  EXPECT_DOUBLE_EQ(summary.at("train/loss").get<double>(), 6.1);  // the last step's
  EXPECT_DOUBLE_EQ(summary.at("eval/loss").get<double>(), 6.2);
  EXPECT_DOUBLE_EQ(summary.at("train_runtime").get<double>(), 0.6);
  EXPECT_EQ(summary.at("train/global_step"), 4);
  EXPECT_EQ(summary.at("_step"), 5);
  EXPECT_TRUE(summary.at("_wandb").contains("runtime"));
}

TEST(WandbRun, AnErrorLeavesExitCodeOne) {
  const Written w = write_run("wandb_run_error", sft_events(), true);
  const auto records = records_of(w.file);
  const auto body = test::record_body(test::parse_proto(records.back()));
  ASSERT_EQ(body->number, 18u);
  EXPECT_EQ(test::find_field(test::parse_proto(body->bytes), 1)->varint, 1u);
}

TEST(WandbRun, RecordsFollowTrlAndTheSdk) {
  const Written w = write_run("wandb_run_golden", sft_events(), false);
  const auto ours = digest(records_of(w.file));
  const auto golden = digest(records_of(test::source_path("tests/fixtures/wandb/trl_sft.wandb")));
  std::vector<std::string> ours_kinds, golden_kinds;
  for (const Seen& s : ours) ours_kinds.push_back(s.kind);
  for (const Seen& s : golden) golden_kinds.push_back(s.kind);
  ASSERT_EQ(ours_kinds, golden_kinds);

  // sft logs three speed keys TRL does not; otherwise the same keys row by row.
  const std::set<std::string> extra = {"train/tokens_per_second", "train/step_time_s",
                                       "train/gflops"};
  for (size_t i = 0; i < ours.size(); ++i) {
    if (ours[i].kind == "history" || ours[i].kind == "summary") {
      std::set<std::string> keys;
      for (const std::string& k : ours[i].keys)
        if (!extra.count(k)) keys.insert(k);
      EXPECT_EQ(keys, golden[i].keys) << "record " << i << " (" << ours[i].kind << ")";
    }
  }
  // The config: every key sft writes is TRL's (training arguments and model config) or one
  // of the ModelConfig / ScriptArguments / sft.cpp options TRL keeps out of its dict; the
  // values the golden run set agree.
  const Seen* cfg = nullptr;
  const Seen* golden_cfg = nullptr;
  for (size_t i = 0; i < ours.size(); ++i)
    if (ours[i].kind == "config" && !cfg) {
      cfg = &ours[i];
      golden_cfg = &golden[i];
    }
  ASSERT_TRUE(cfg && golden_cfg);
  // TRL's other argument classes (ModelConfig, ScriptArguments, DatasetMixtureConfig), from the
  // list tools/list_trl_flags.py writes, and sft.cpp's own options.
  std::set<std::string> not_in_trl = {"dataset_columns",
                                      "skip_invalid_rows",
                                      "eval_split_ratio",
                                      "max_shard_size",
                                      "init_from_config",
                                      "skip_nonfinite_steps",
                                      "num_threads",
                                      "overwrite_output_dir",
                                      "warmup_ratio",
                                      "logging_dir",
                                      "nproc_per_node",
                                      "zero_stage",
                                      "accelerate_config",
                                      "tp_size",
                                      "ep_size",
                                      "gradient_checkpointing_keep_mlp",
                                      "_wandb"};
  std::ifstream trl_fields(test::source_path("tests/fixtures/trl/trl_sft_flags.txt"));
  for (std::string line; std::getline(trl_fields, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::string name = line.substr(0, line.find('\t'));
    if (line.substr(line.rfind('\t') + 1) != "SFTConfig") not_in_trl.insert(name);
  }
  ASSERT_GT(not_in_trl.size(), 40u);
  for (const std::string& k : cfg->keys)
    EXPECT_TRUE(golden_cfg->keys.count(k) || not_in_trl.count(k)) << "config key " << k;
  for (const char* k : {"learning_rate",
                        "max_steps",
                        "logging_steps",
                        "per_device_train_batch_size",
                        "max_length",
                        "seed",
                        "bf16",
                        "eval_strategy",
                        "eval_steps",
                        "save_steps",
                        "run_name",
                        "report_to",
                        "num_train_epochs",
                        "lr_scheduler_type",
                        "warmup_steps",
                        "weight_decay",
                        "adam_beta1",
                        "adam_beta2",
                        "adam_epsilon",
                        "max_grad_norm",
                        "gradient_accumulation_steps",
                        "packing",
                        "packing_strategy",
                        "assistant_only_loss",
                        "dataset_text_field",
                        "gradient_checkpointing",
                        "hidden_size",
                        "num_hidden_layers",
                        "vocab_size",
                        "tie_word_embeddings",
                        "include_for_metrics",
                        "debug"}) {
    ASSERT_TRUE(cfg->values.count(k)) << k;
    EXPECT_EQ(Json::parse(cfg->values.at(k)), Json::parse(golden_cfg->values.at(k))) << k;
  }
}

}  // namespace sft
