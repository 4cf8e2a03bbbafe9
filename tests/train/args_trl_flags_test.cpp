// Every field `trl sft` parses (tests/fixtures/trl/trl_sft_flags.txt, written from TRL itself by
// tools/list_trl_flags.py) against the one table in train/args_trl_flags.cpp: each parses with a
// sample value in both spellings and is implemented, accepted with a one-line notice, or refused
// with its reason. A TRL upgrade that adds a field fails here until the table says what to do.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "test_paths.h"
#include "train/args.h"
#include "train/args_trl_flags.h"

namespace sft {

namespace {

struct TrlField {
  std::string name, type, trl_default;
};

std::vector<TrlField> trl_fields() {
  std::ifstream in(test::source_path("tests/fixtures/trl/trl_sft_flags.txt"));
  std::vector<TrlField> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream fields(line);
    TrlField f;
    std::getline(fields, f.name, '\t');
    std::getline(fields, f.type, '\t');
    std::getline(fields, f.trl_default, '\t');
    out.push_back(f);
  }
  return out;
}

// Valid values for implemented fields whose generic sample would be refused.
const std::map<std::string, std::string> kSamples = {
    {"attn_implementation", "sdpa"},
    {"dtype", "bfloat16"},
    {"eval_strategy", "steps"},
    {"save_strategy", "epoch"},
    {"logging_strategy", "epoch"},
    {"lr_scheduler_type", "inverse_sqrt"},
    {"lr_scheduler_kwargs", R"({"timescale": 10})"},
    {"loss_type", "nll"},
    {"optim", "adamw_torch"},
    {"packing_strategy", "wrapped"},
    {"truncation_mode", "keep_end"},
    {"train_sampling_strategy", "sequential"},
    {"log_level", "warning"},
    {"report_to", "tensorboard"},
    {"datasets", R"([{"path": "a.jsonl"}])"},
    {"use_dora", "false"},
    {"bnb_4bit_quant_type", "fp4"},
    {"bnb_4bit_quant_storage", "bfloat16"},
    {"load_in_4bit", "false"},  // true needs --use_peft (validate_quant_args)
    {"load_in_8bit", "false"},  // true is refused by validate_quant_args
    {"hub_strategy", "end"},    // an option; true is refused by validate_lora_args
    {"model_init_kwargs", R"({"dtype": "bfloat16"})"},
    {"gradient_checkpointing_kwargs", R"({"use_reentrant": false})"},
    {"test_split_size", "0.1"},
    {"lora_target_modules", "q_proj v_proj"},
    {"lora_modules_to_save", "lm_head"},
    {"deepspeed", R"({"zero_optimization": {"stage": 2}})"},
    {"fsdp", "shard_grad_op"},
};

// A sample value of the field's type that differs from TRL's default (so notices and refusals
// show), or a valid one from kSamples.
std::string sample_for(const TrlField& f, const TrlFlag& flag) {
  if (auto it = kSamples.find(f.name); it != kSamples.end()) return it->second;
  switch (flag.type) {
    case OptionType::kBool:
      return flag.trl_default == "true" ? "false" : "true";
    case OptionType::kInt:
      return flag.trl_default == "2" ? "3" : "2";
    case OptionType::kFloat:
      return "0.25";
    case OptionType::kJson:
      return R"({"a": 1})";
    case OptionType::kStringList:
      return "a b";
    default:
      return "x";
  }
}

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

std::vector<std::string> command(const std::string& flag, const std::string& value) {
  std::vector<std::string> tokens = {
      "--model_name_or_path", "m", "--dataset_name", "d", "--output_dir", "o", flag};
  // JSON values are one token; everything else may be several words (nargs='+' lists).
  if (!value.empty() && (value[0] == '{' || value[0] == '[')) {
    tokens.push_back(value);
  } else {
    for (const std::string& w : words(value)) tokens.push_back(w);
  }
  return tokens;
}

std::string dashed(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

}  // namespace

TEST(TrlFlags, FixtureIsTrl116) {
  std::ifstream in(test::source_path("tests/fixtures/trl/trl_sft_flags.txt"));
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("# trl 1.16.", 0), 0u) << header;
  EXPECT_GE(trl_fields().size(), 160u);
}

TEST(TrlFlags, TableCoversExactlyTrlsFields) {
  const std::vector<TrlField> fields = trl_fields();
  for (const TrlField& f : fields) {
    EXPECT_NE(find_trl_flag(f.name), nullptr)
        << "TRL field --" << f.name << " (" << f.type << ", default " << f.trl_default
        << ") is new: add it to kFlags in src/train/args_trl_flags.cpp (implemented, notice or "
           "refused)";
  }
  for (const TrlFlag& flag : trl_flags()) {
    const bool in_trl = std::any_of(fields.begin(), fields.end(),
                                    [&](const TrlField& f) { return f.name == flag.name; });
    EXPECT_TRUE(in_trl) << "--" << flag.name << " is no longer a TRL field: drop it from kFlags";
    if (flag.kind != TrlFlagKind::kImplemented) {
      EXPECT_FALSE(flag.message.empty()) << flag.name;
    }
  }
}

TEST(TrlFlags, EveryFieldParsesAndIsImplementedNoticedOrRefused) {
  TrainingArgs defaults;
  const OptionSet options = training_options(defaults);
  int implemented = 0, noticed = 0, refused = 0;
  for (const TrlField& f : trl_fields()) {
    const TrlFlag* flag = find_trl_flag(f.name);
    if (flag == nullptr) continue;  // reported above
    SCOPED_TRACE("--" + f.name);
    ASSERT_TRUE(options.has(f.name)) << "not an option of `sft train`";
    const std::string value = sample_for(f, *flag);
    for (const std::string& spelling : {"--" + f.name, "--" + dashed(f.name)}) {
      SCOPED_TRACE(spelling + " " + value);
      const std::vector<std::string> tokens = command(spelling, value);
      switch (flag->kind) {
        case TrlFlagKind::kImplemented: {
          TrainingArgs a;
          EXPECT_NO_THROW(a = parse_training_args(tokens));
          for (const std::string& n : a.notices) {
            EXPECT_EQ(n.find("not supported"), std::string::npos) << n;
          }
          break;
        }
        case TrlFlagKind::kNotice: {
          TrainingArgs a;
          ASSERT_NO_THROW(a = parse_training_args(tokens));
          ASSERT_EQ(a.notices.size(), 1u);
          EXPECT_EQ(a.notices[0], "--" + f.name + " " + std::string(flag->message));
          break;
        }
        case TrlFlagKind::kRefused:
          try {
            parse_training_args(tokens);
            ADD_FAILURE() << "a refused flag with a non-default value must fail";
          } catch (const UsageError& e) {
            EXPECT_NE(std::string(e.what()).find("--" + f.name + " "), std::string::npos);
            EXPECT_NE(std::string(e.what()).find(flag->message), std::string::npos) << e.what();
          }
          break;
      }
    }
    // TRL's own default never prints or refuses anything.
    if (flag->kind != TrlFlagKind::kImplemented && flag->trl_default != "None" &&
        !flag->trl_default.empty()) {
      const TrainingArgs a =
          parse_training_args(command("--" + f.name, std::string(flag->trl_default)));
      EXPECT_TRUE(a.notices.empty());
    }
    implemented += flag->kind == TrlFlagKind::kImplemented;
    noticed += flag->kind == TrlFlagKind::kNotice;
    refused += flag->kind == TrlFlagKind::kRefused;
  }
  EXPECT_GT(implemented, 60);
  EXPECT_GT(noticed, 40);
  EXPECT_GT(refused, 8);
}

TEST(TrlFlags, ClearReasons) {
  try {
    parse_training_args(command("--load_in_8bit", "true"));
    FAIL() << "--load_in_8bit must be refused";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "[args] --load_in_8bit true: 8-bit (LLM.int8) loading is not supported in "
                 "sft.cpp (hint: --load_in_4bit true --use_peft true trains QLoRA on a 4-bit "
                 "base)");
  }
  const TrainingArgs a = parse_training_args(command("--torch_compile", ""));
  ASSERT_EQ(a.notices.size(), 1u);
  EXPECT_EQ(a.notices[0],
            "--torch_compile has no effect in sft.cpp: its kernels are compiled "
            "ahead of time");
  EXPECT_TRUE(parse_training_args(command("--tf32", "false")).notices.size() == 1);
}

}  // namespace sft
