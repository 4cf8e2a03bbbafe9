#include "cli/command_registry.h"

#include <algorithm>

namespace sft::cli {

namespace {
// Function-local so registration from other translation units never sees it uninitialised.
std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}
}  // namespace

CommandRegistrar::CommandRegistrar(const Command& command) {
  registry().push_back(command);
}

std::vector<Command> registered_commands() {
  std::vector<Command> out = registry();
  std::sort(out.begin(), out.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  return out;
}

}  // namespace sft::cli
