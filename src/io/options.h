// Typed options bound to struct fields, read from argv-style tokens and YAML files.
//
// This is how `sft train` takes TRL's flags: each option names a field, its type, its
// group and help. Accepted forms, as HfArgumentParser: `--name value`, `--name=value`, dashes
// for underscores (`--output-dir`); booleans also as a bare `--name` or `--no_name`; lists as
// separate words (`--lora_target_modules q_proj v_proj`, up to the next `--flag`) or
// comma-separated; `--config FILE.yaml` loads the same keys from YAML first, and flags given on
// the command line override it (as TRL's TrlParser). `None`/`null` resets an optional value.
// Unknown names fail naming the closest valid option (prefix, then substring, then shared
// words, then a small edit distance; no suggestion rather than a far one); bad values name the
// option and the source (command line, or YAML file and line). Mistakes on the command line and
// in the YAML file alike throw UsageError, which cli/main.cpp turns into exit code 2
// (docs/cli.md); only a config file that cannot be read is an error of its own (exit 1).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "io/json.h"

namespace sft {

// A command called the wrong way: unknown flag, flag without its value, bad value, missing
// required flag. Exit code 2, so that scripts can tell it from a run that failed.
class UsageError : public Error {
 public:
  using Error::Error;
};
[[noreturn]] void fail_usage(std::string_view component, std::string_view message);

enum class OptionType { kBool, kInt, kFloat, kString, kStringList, kJson };

struct Option {
  std::string name;
  std::string group;
  std::string help;
  OptionType type;
  bool optional = false;                                            // accepts None/null
  std::function<void(const std::optional<std::string>&)> set_text;  // nullopt = None
  std::function<std::string()> show;                                // current value, for --help
  // The current value typed (null for None, an empty list as None), e.g. to record a run's
  // arguments: exact where show() rounds (floats to 6 digits).
  std::function<Json()> value;
};

class OptionSet {
 public:
  explicit OptionSet(std::string command) : command_(std::move(command)) {}

  void add_bool(std::string name, bool* field, std::string group, std::string help);
  void add_optional_bool(std::string name, std::optional<bool>* field, std::string group,
                         std::string help);
  void add_int(std::string name, int64_t* field, std::string group, std::string help);
  // `none_word` (e.g. "auto") is read as None too, for TRL fields typed int | str.
  void add_optional_int(std::string name, std::optional<int64_t>* field, std::string group,
                        std::string help, std::string none_word = "");
  void add_float(std::string name, double* field, std::string group, std::string help);
  void add_optional_float(std::string name, std::optional<double>* field, std::string group,
                          std::string help);
  void add_string(std::string name, std::string* field, std::string group, std::string help);
  void add_optional_string(std::string name, std::optional<std::string>* field, std::string group,
                           std::string help);
  // Comma-separated on the command line, a list or a scalar in YAML.
  void add_string_list(std::string name, std::vector<std::string>* field, std::string group,
                       std::string help);
  // A JSON object on the command line ('{"min_lr": 1e-6}'), a mapping in YAML; with
  // `allow_array`, also a JSON array / YAML sequence (e.g. TRL's `datasets:` mixture).
  void add_json(std::string name, Json* field, std::string group, std::string help,
                bool allow_array = false);
  // A value kept as text in `store[name]` after checking it has `type`, for flags accepted
  // for compatibility whose value sft.cpp only compares with TRL's default.
  void add_text(std::string name, OptionType type, std::map<std::string, std::string>* store,
                std::string group, std::string help, std::string default_text);

  // Applies `--config FILE` (if any) and then every other token; returns positional tokens.
  std::vector<std::string> parse(const std::vector<std::string>& tokens);
  void apply_yaml_file(const std::string& path);
  // Whether `--help` or `-h` stands where a flag may stand (not as the value of a flag that
  // takes one, as in `--text -h`). Checked before parse() so help works with other mistakes.
  bool asks_for_help(const std::vector<std::string>& tokens) const;

  // Options given explicitly (command line or YAML), for defaults that depend on others.
  bool was_set(const std::string& name) const { return set_.count(name) != 0; }
  // Help text with options grouped in the order groups were first used; with `only`, just
  // those options (a command that reads a subset of a shared table).
  std::string help(const std::set<std::string>* only = nullptr) const;
  // The option a mistyped name most likely meant, or "" when none is close (for "did you
  // mean"): a prefix or extension of the name, else a name containing it, else the most shared
  // `_` words, else an edit distance of at most a third of the name.
  std::string closest(std::string_view name) const;
  // Every option, in the order added (e.g. to record a run's arguments).
  const std::vector<Option>& options() const { return options_; }
  // Whether `name` is an option (dash spellings included).
  bool has(std::string_view name) const { return find(name) != nullptr; }

 private:
  Option& add(Option option);
  const Option* find(std::string_view name) const;
  std::string unknown_hint(const std::string& name) const;
  void apply(const Option& option, const std::optional<std::string>& text,
             const std::string& source);

  std::string command_;
  std::vector<Option> options_;
  std::set<std::string> set_;
};

}  // namespace sft
