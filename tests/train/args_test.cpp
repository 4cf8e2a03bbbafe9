#include "train/args.h"

#include <gtest/gtest.h>

#include "core/error.h"
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
  for (const Option& option : o.options()) EXPECT_TRUE(j.contains(option.name)) << option.name;
  EXPECT_EQ(j.size(), o.options().size());
}

}  // namespace sft
