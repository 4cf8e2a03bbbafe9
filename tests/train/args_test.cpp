#include "train/args.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "test_paths.h"
#include "train/args_json.h"

namespace sft {

namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string token;
  bool quoted = false;
  for (char c : line) {
    if (c == '\'') {
      quoted = !quoted;
    } else if (c == ' ' && !quoted) {
      if (!token.empty()) out.push_back(token);
      token.clear();
    } else {
      token += c;
    }
  }
  if (!token.empty()) out.push_back(token);
  return out;
}

}  // namespace

// The command the project is built toward, verbatim.
TEST(TrainingArgs, TheTargetCommandParses) {
  TrainingArgs a = parse_training_args(split(
      "--model_name_or_path Qwen/Qwen3-0.6B --dataset_name trl-lib/Capybara --learning_rate 2.0e-5 "
      "--num_train_epochs 1 --packing --bf16 --fp16 false --per_device_train_batch_size 1 "
      "--gradient_accumulation_steps 16 --eos_token '<|im_end|>' --eval_strategy no "
      "--logging_steps 1 "
      "--use_peft false --lora_r 32 --lora_alpha 16 --report_to tensorboard --output_dir "
      "Qwen3-0.6B-SFT"));
  EXPECT_EQ(a.model_name_or_path, "Qwen/Qwen3-0.6B");
  EXPECT_DOUBLE_EQ(a.learning_rate, 2e-5);
  EXPECT_TRUE(a.packing);
  EXPECT_EQ(a.bf16, true);
  EXPECT_FALSE(a.fp16);
  EXPECT_EQ(a.per_device_train_batch_size, 1);
  EXPECT_EQ(a.gradient_accumulation_steps, 16);
  EXPECT_EQ(a.eos_token, "<|im_end|>");
  EXPECT_EQ(a.logging_steps, 1);
  EXPECT_FALSE(a.use_peft);
  EXPECT_EQ(a.lora_r, 32);
  EXPECT_EQ(a.report_to, std::vector<std::string>{"tensorboard"});
  EXPECT_EQ(a.output_dir, "Qwen3-0.6B-SFT");
}

TEST(TrainingArgs, DefaultsAreSftConfigs) {
  TrainingArgs a =
      parse_training_args(split("--model_name_or_path m --dataset_name d --output_dir o"));
  EXPECT_DOUBLE_EQ(a.learning_rate, 2e-5);  // SFTConfig, not TrainingArguments' 5e-5
  EXPECT_EQ(a.logging_steps, 10);
  EXPECT_TRUE(a.gradient_checkpointing);
  EXPECT_EQ(a.bf16, true);  // None → bf16 unless fp16
  EXPECT_EQ(a.max_length, 1024);
  EXPECT_EQ(a.packing_strategy, "bfd");
  EXPECT_EQ(a.seed, 42);
  EXPECT_DOUBLE_EQ(a.max_grad_norm, 1.0);
  EXPECT_DOUBLE_EQ(a.num_train_epochs, 3.0);
  EXPECT_EQ(a.per_device_train_batch_size, 8);
  EXPECT_EQ(a.lr_scheduler_type, "linear");
  EXPECT_EQ(a.lora_r, 16);
  EXPECT_EQ(a.lora_alpha, 32);
  EXPECT_FALSE(a.completion_only_loss.has_value());
  EXPECT_EQ(a.train_sampling_strategy, "random");  // transformers' RandomSampler
}

// --use_cpu (TrainingArguments.use_cpu): false by default, both spellings, a real option now
// (train/device_choice.h), so no notice.
TEST(TrainingArgs, UseCpuIsTheDeviceChoice) {
  const std::string base = "--model_name_or_path m --dataset_name d --output_dir o ";
  EXPECT_FALSE(parse_training_args(split(base)).use_cpu);
  for (const char* given : {"--use_cpu", "--use_cpu true", "--use-cpu True", "--use_cpu=true"}) {
    const TrainingArgs a = parse_training_args(split(base + given));
    EXPECT_TRUE(a.use_cpu) << given;
    EXPECT_TRUE(a.notices.empty()) << given << ": " << a.notices.front();
  }
  EXPECT_FALSE(parse_training_args(split(base + "--use_cpu false")).use_cpu);
  EXPECT_THROW(parse_training_args(split(base + "--use_cpu maybe")), UsageError);
}

TEST(TrainingArgs, KeepingTheMlpProductsNeedsCheckpointing) {
  const std::string base = "--model_name_or_path m --dataset_name d --output_dir o ";
  EXPECT_FALSE(parse_training_args(split(base)).gradient_checkpointing_keep_mlp);
  const TrainingArgs kept = parse_training_args(split(base + "--gradient_checkpointing_keep_mlp"));
  EXPECT_TRUE(kept.gradient_checkpointing_keep_mlp);
  EXPECT_TRUE(kept.notices.empty());
  const TrainingArgs alone = parse_training_args(
      split(base + "--gradient_checkpointing false --gradient_checkpointing_keep_mlp true"));
  ASSERT_EQ(alone.notices.size(), 1u);
  EXPECT_EQ(alone.notices[0],
            "--gradient_checkpointing_keep_mlp has no effect without --gradient_checkpointing: "
            "every activation is kept already");
}

TEST(TrainingArgs, RelationsAreChecked) {
  auto error_of = [](const std::string& line) {
    try {
      parse_training_args(split(line));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string base = "--model_name_or_path m --dataset_name d --output_dir o ";
  EXPECT_EQ(error_of(base + "--bf16 --fp16"), "[args] --bf16 and --fp16 are mutually exclusive");
  EXPECT_EQ(error_of("--dataset_name d --output_dir o"), "[args] --model_name_or_path is required");
  EXPECT_NE(
      error_of(base + "--packing_strategy ffd").find("is not one of: bfd, bfd_split, wrapped"),
      std::string::npos);
  EXPECT_NE(error_of(base + "--train_sampling_strategy group_by_length")
                .find("is not one of: random, sequential"),
            std::string::npos);
  EXPECT_EQ(error_of(base + "--train_sampling_strategy sequential"), "");
  EXPECT_NE(error_of(base + "--report_to comet_ml").find("--report_to 'comet_ml'"),
            std::string::npos);
  EXPECT_EQ(error_of(base + "--report_to wandb"), "");
  EXPECT_NE(error_of(base + "--gradient_accumulation_steps 0").find("must be positive"),
            std::string::npos);
  EXPECT_NE(error_of(base + "--lerning_rate 1e-4").find("did you mean --learning_rate?"),
            std::string::npos);
  EXPECT_NE(error_of(base + "model").find("takes only --flags"), std::string::npos);
  EXPECT_NE(error_of(base + "--max_shard_size lots").find("size 'lots'"), std::string::npos);
}

TEST(TrainingArgs, TrlUsersForms) {
  const TrainingArgs a = parse_training_args(
      split("--model-name-or-path m --dataset_name=d --output-dir o --lora_target_modules q_proj "
            "v_proj --report_to none --no_gradient_checkpointing --lr_scheduler_type inverse_sqrt "
            "--pad_to_multiple_of auto --model_init_kwargs '{\"dtype\": \"bfloat16\"}'"));
  EXPECT_EQ(a.output_dir, "o");
  EXPECT_EQ(a.lora_target_modules, (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_TRUE(a.report_to.empty());  // "none", as transformers
  EXPECT_FALSE(a.gradient_checkpointing);
  EXPECT_FALSE(a.pad_to_multiple_of.has_value());
  EXPECT_EQ(a.dtype, "bfloat16");  // model_init_kwargs' dtype, as TRL loads the model
  // An explicit --dtype wins over model_init_kwargs.
  EXPECT_EQ(parse_training_args(split("--model_name_or_path m --dataset_name d --output_dir o "
                                      "--dtype float32 --model_init_kwargs '{\"dtype\": "
                                      "\"bfloat16\"}'"))
                .dtype,
            "float32");
}

// Without --output_dir, TRL's default folder (TrainingArguments.output_dir = "trainer_output").
TEST(TrainingArgs, OutputDirDefaultsToTrainerOutput) {
  const TrainingArgs a = parse_training_args(split("--model_name_or_path m --dataset_name d"));
  EXPECT_EQ(a.output_dir, "trainer_output");
  EXPECT_THROW(parse_training_args(split("--model_name_or_path m --dataset_name d --output_dir=")),
               UsageError);
}

std::string usage_message(const std::string& flags) {
  try {
    parse_training_args(split("--model_name_or_path m --dataset_name d " + flags));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// Integer flags print as integers, floats as the user wrote them (not "0.000000").
TEST(TrainingArgs, RefusedNumbersPrintAsGiven) {
  EXPECT_EQ(usage_message("--per_device_train_batch_size 0"),
            "[args] --per_device_train_batch_size must be positive, got 0");
  EXPECT_EQ(usage_message("--gradient_accumulation_steps -3"),
            "[args] --gradient_accumulation_steps must be positive, got -3");
  EXPECT_EQ(usage_message("--learning_rate 0"), "[args] --learning_rate must be positive, got 0");
  EXPECT_EQ(usage_message("--logging_steps -0.5"),
            "[args] --logging_steps must be positive, got -0.5");
  EXPECT_EQ(usage_message("--use_peft --lora_dropout 1.5"),
            "[args] --lora_dropout must be in [0, 1), got 1.5");
}

// A --config file's mistakes exit 2 as the same flags would; its integer lists stay integers.
TEST(TrainingArgs, YamlConfigMistakesAreUsageErrors) {
  const std::string dir = test::fresh_output_dir("args_yaml");
  std::ofstream(dir + "/bad.yaml") << "model_name_or_path: m\ndataset_name: d\nmax_steps: many\n";
  EXPECT_NE(usage_message("--config " + dir + "/bad.yaml").find("--max_steps expects an integer"),
            std::string::npos);
  std::ofstream(dir + "/ints.yaml") << "model_name_or_path: m\ndataset_name: d\n"
                                       "include_for_metrics: [2, 3]\n";
  const TrainingArgs a = parse_training_args(split("--config " + dir + "/ints.yaml"));
  EXPECT_EQ(training_args_json(a).at("include_for_metrics"), Json::array({"2", "3"}));
}

// --help gives each option one default: the help text's own where it states one.
TEST(TrainingArgs, HelpShowsOneDefaultPerOption) {
  TrainingArgs a;
  const std::string help = training_options(a).help();
  for (const char* flag : {"--eval_steps", "--data_seed", "--num_threads", "--dataset_num_proc"}) {
    const size_t at = help.find(std::string("\n  ") + flag + " ");
    ASSERT_NE(at, std::string::npos) << flag;
    const std::string line = help.substr(at + 1, help.find('\n', at + 1) - at - 1);
    EXPECT_EQ(line.find("(default: "), line.rfind("(default: ")) << line;
  }
  EXPECT_NE(help.find("(default: trainer_output)"), std::string::npos);
}

// Mistakes in flags are usage errors (exit 2, docs/cli.md), found before any work.
TEST(TrainingArgs, MistakesAreUsageErrors) {
  const std::string base = "--model_name_or_path m --dataset_name d --output_dir o ";
  for (const char* bad :
       {"--lr_scheduler_type cosine_typo", "--packing_strategy ffd", "--bf16 --fp16",
        "--gradient_accumulation_steps 0", "--max_shard_size lots", "--log_level loud",
        "--attn_implementation flash", "--dtype float8", "positional", "--deepspeed ds.json",
        "--neftune_noise_alpha -1", "--test_split_size 100"}) {
    EXPECT_THROW(parse_training_args(split(base + bad)), UsageError) << bad;
  }
  EXPECT_THROW(parse_training_args(split("--dataset_name d --output_dir o")), UsageError);
  try {
    parse_training_args(split(base + "--lr_scheduler_type cosine_typo"));
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("inverse_sqrt"), std::string::npos) << e.what();
  }
}

TEST(TrainingArgs, SizesParseAsTransformers) {
  EXPECT_EQ(parse_size_bytes("5GB"), 5'000'000'000u);
  EXPECT_EQ(parse_size_bytes("100KB"), 100'000u);
  EXPECT_EQ(parse_size_bytes("2GiB"), 2147483648u);
  EXPECT_EQ(parse_size_bytes("1024"), 1024u);
}

TEST(TrainingArgs, HelpListsEveryGroup) {
  TrainingArgs a;
  const std::string help = training_options(a).help();
  for (const char* group : {"Model:", "Data:", "Training:", "Optimizer and schedule:",
                            "Logging, evaluation and saving:", "LoRA (PEFT):", "sft.cpp:"}) {
    EXPECT_NE(help.find(group), std::string::npos) << group;
  }
}

// The recorded arguments read the flag table: every option, at its exact value (not the
// 6 digits --help shows), typed, None as null.
TEST(TrainingArgsJson, EveryOptionFromTheFlagTableAtItsExactValue) {
  TrainingArgs a;
  OptionSet o = training_options(a);
  o.parse({"--ddp_timeout", "12.3456789", "--neftune_noise_alpha", "0.123456789", "--learning_rate",
           "1.23456789e-5", "--tp_size", "2", "--hub_model_id", "me/x"});
  const Json j = training_args_json(a);
  EXPECT_EQ(j.at("ddp_timeout").get<double>(), 12.3456789);
  EXPECT_EQ(j.at("neftune_noise_alpha").get<double>(), 0.123456789);
  EXPECT_EQ(j.at("learning_rate").get<double>(), 1.23456789e-5);
  EXPECT_EQ(j.at("tp_size"), 2);
  EXPECT_EQ(j.at("hub_model_id"), "me/x");
  EXPECT_TRUE(j.at("test_split_size").is_null());
  // TrainingArguments' lists: [] by default, not [""] or "" (TRL 1.16: include_for_metrics=[],
  // debug=[]).
  EXPECT_EQ(j.at("include_for_metrics"), Json::array());
  EXPECT_EQ(j.at("debug"), Json::array());
  for (const Option& option : o.options()) EXPECT_TRUE(j.contains(option.name)) << option.name;
  // As to_dict(): the Hub token (and any *_token field) never reaches W&B or TensorBoard.
  OptionSet with_token = training_options(a);
  with_token.parse({"--hub_token", "hf_secret", "--eos_token", "<|im_end|>"});
  const Json masked = training_args_json(a);
  EXPECT_EQ(masked.at("hub_token"), "<HUB_TOKEN>");
  EXPECT_EQ(masked.at("eos_token"), "<EOS_TOKEN>");
  EXPECT_EQ(masked.at("pad_token"), "<PAD_TOKEN>");
  EXPECT_EQ(masked.dump().find("hf_secret"), std::string::npos);
  EXPECT_EQ(j.size(), o.options().size());
}

}  // namespace sft
