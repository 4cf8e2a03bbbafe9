// The subcommands of the `sft` binary. Each takes the arguments after its name and
// returns the process exit code; errors are thrown and reported once by main.
#pragma once

#include <string>
#include <vector>

namespace sft::cli {

using Args = std::vector<std::string>;

int run_inspect(const Args& args);

}  // namespace sft::cli
