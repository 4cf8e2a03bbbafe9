// The one table of every field `trl sft` parses (TRL 1.16: ScriptArguments, SFTConfig with
// all of transformers' TrainingArguments, ModelConfig, DatasetMixtureConfig) and what sft.cpp
// does with it:
//   implemented  a real option of training_options() (train/args.cpp)
//   notice       accepted; a value other than TRL's default prints one line saying why it has
//                no effect here ("--torch_compile has no effect in sft.cpp: ...")
//   refused      accepted at TRL's default; any other value is a usage error giving the reason
//                ("--load_in_4bit true: QLoRA is not supported yet")
// tests/train/args_trl_flags_test.cpp checks the table against
// tests/fixtures/trl/trl_sft_flags.txt (written by tools/list_trl_flags.py from TRL itself),
// so a TRL upgrade shows its new fields as a test failure.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/options.h"

namespace sft {

enum class TrlFlagKind { kImplemented, kNotice, kRefused };

struct TrlFlag {
  std::string_view name;
  TrlFlagKind kind;
  OptionType type;               // for notice/refused entries: how the value is checked
  std::string_view trl_default;  // as OptionSet::add_text stores it ("false", "0", "None")
  std::string_view message;      // notice: the tail after "--name"; refused: the reason
};

std::span<const TrlFlag> trl_flags();
const TrlFlag* find_trl_flag(std::string_view name);

// Registers every notice/refused entry as a text option storing into `store` (help groups
// "TRL flags without effect in sft.cpp" and "TRL flags not supported yet").
void add_trl_compat_options(OptionSet& options, std::map<std::string, std::string>* store);

// For each stored value that differs from TRL's default: a notice line appended to `notices`,
// or a UsageError for a refused flag.
void check_trl_compat_values(const std::map<std::string, std::string>& store,
                             std::vector<std::string>& notices);

}  // namespace sft
