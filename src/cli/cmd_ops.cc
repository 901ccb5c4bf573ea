// npufuse ops show|search|list
#include "cli/command.h"

#include <fmt/format.h>

namespace npufuse::cli {

Registered register_ops(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("ops", "torch_npu operator reference");
  cmd->require_subcommand(1);
  static std::string name;
  auto* show = cmd->add_subcommand("show", "Show one operator");
  show->add_option("name", name)->required();
  cmd->add_subcommand("search", "Search operators");
  cmd->add_subcommand("list", "List operators");
  return {cmd, [] {
            fmt::print(stderr, "npufuse ops: not available in this version: the catalog is not built yet\n");
            return static_cast<int>(kUsage);
          }};
}

}  // namespace npufuse::cli
