// The subcommands of the `sft` binary. Each lives in one cli/cmd_<name>.cpp and registers
// itself at static-initialisation time:
//
//   int run_inspect(const sft::cli::Args& args);
//   SFT_REGISTER_COMMAND("inspect", "describe a model ...", run_inspect);
//
// A command returns the process exit code; errors are thrown and reported once by main.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sft::cli {

using Args = std::vector<std::string>;

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(const Args&);
};

// Registered commands sorted by name.
std::vector<Command> registered_commands();

struct CommandRegistrar {
  explicit CommandRegistrar(const Command& command);
};

}  // namespace sft::cli

#define SFT_REGISTER_COMMAND(name, summary, fn) \
  static const ::sft::cli::CommandRegistrar sft_command_registrar_##fn({name, summary, fn})
