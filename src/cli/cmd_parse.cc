// npufuse parse FILE... [--dump-ast] [--quiet]
#include "cli/command.h"

#include <fmt/format.h>

namespace npufuse::cli {

Registered register_parse(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("parse", "Parse Python files; optionally print the AST like CPython's ast.dump");
  static std::vector<std::string> files;
  static bool dump = false, quiet = false;
  cmd->add_option("files", files, "Python source files")->required();
  cmd->add_flag("--dump-ast", dump, "Print ast.dump(ast.parse(src), include_attributes=True)");
  cmd->add_flag("--quiet", quiet, "Print nothing; exit non-zero if any file fails");
  return {cmd, [] {
            fmt::print(stderr, "npufuse parse: not available in this version: the parser is not built yet\n");
            return static_cast<int>(kUsage);
          }};
}

}  // namespace npufuse::cli
