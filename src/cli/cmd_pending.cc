// Subcommands whose capability has not landed yet. Each one has its real
// options and help text, and says plainly that it is not available; it never
// pretends to have done the work. Exit code 2.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "cli/command.h"

namespace npufuse::cli {
namespace {

Runner not_yet(std::string name, std::string what) {
  return [name, what] {
    fmt::print(stderr,
               "npufuse {}: not available in this version: {}\n"
               "Nothing was analysed or written.\n",
               name, what);
    return static_cast<int>(kUsage);
  };
}

struct PendingOptions {
  std::vector<std::string> paths;
  std::string config, plan, out, format, lang;
};

}  // namespace

Registered register_verify(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("verify", "Precision and performance check of original vs fused chains");
  static PendingOptions o;
  cmd->add_option("paths", o.paths, "Patched directory or plan")->required();
  return {cmd, not_yet("verify", "the verifier is not built yet")};
}

}  // namespace npufuse::cli
