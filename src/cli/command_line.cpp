// parse_command_line and usage_error: see command_line.h.
#include "cli/command_line.h"

#include <cstdio>

namespace sft::cli {

std::optional<Args> parse_command_line(std::string_view name, std::string_view usage,
                                       OptionSet& options, const Args& args, const Positionals& p,
                                       const std::set<std::string>* help_only) {
  if (options.asks_for_help(args)) {
    std::printf("%.*s%s", static_cast<int>(usage.size()), usage.data(),
                options.help(help_only).c_str());
    return std::nullopt;
  }
  Args positional = options.parse(args);
  const std::string sft_name = "sft " + std::string(name);
  if (positional.size() > p.max) {
    const std::string& extra = positional[p.max];
    if (p.max == 0) fail_usage("cli", sft_name + " takes only --flags, got '" + extra + "'");
    fail_usage("cli", sft_name + " takes " + std::string(p.what) + ", got '" + extra +
                          "' too (see " + sft_name + " --help)");
  }
  if (positional.size() < p.min)
    fail_usage("cli",
               sft_name + " needs " + std::string(p.what) + " (see " + sft_name + " --help)");
  return positional;
}

int usage_error(std::string_view usage) {
  std::fwrite(usage.data(), 1, usage.size(), stderr);
  return 2;
}

}  // namespace sft::cli
