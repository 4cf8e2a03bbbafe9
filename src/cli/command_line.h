// The preamble every `sft` command shares, in one place:
//
//   --help / -h   where a flag may stand (OptionSet::asks_for_help, checked before parsing so
//                 help works alongside other mistakes): the usage text, then the option table,
//                 on stdout; the command then returns 0
//   flags         OptionSet::parse: a misspelt flag or bad value is a UsageError
//   positional    as many words as Positionals allows (none by default); else a UsageError
//
// A UsageError exits 2 (cli/main.cpp), so scripts can tell a command called the wrong way
// from one that failed; usage_error() does the same for a command missing required flags.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "cli/command_registry.h"
#include "io/options.h"

namespace sft::cli {

// How many positional words a command takes, and what they are ("one MODEL").
struct Positionals {
  size_t min = 0, max = 0;
  std::string_view what;
};

// `name` as typed after `sft` ("generate", "debug forward"); `usage` the text --help prints
// before the option table (with help_only, only those flags: `sft prepare` accepts every
// `sft train` flag but reads few). The positional words, or nullopt when --help was asked for
// (and printed).
std::optional<Args> parse_command_line(std::string_view name, std::string_view usage,
                                       OptionSet& options, const Args& args,
                                       const Positionals& positionals = {},
                                       const std::set<std::string>* help_only = nullptr);

// A command missing what it needs: its usage on stderr; returns 2, the usage-error exit code.
int usage_error(std::string_view usage);

}  // namespace sft::cli
