// npufuse: finds torch_npu fused-operator opportunities in PyTorch LLM code.
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "cli/command.h"

int main(int argc, char** argv) {
  using namespace npufuse::cli;
  CLI::App app{
      "npufuse: analyse PyTorch LLM source for torch_npu fused operators on Ascend NPUs.\n"
      "Exit codes: 0 success, 1 findings or failed check (where a command documents it), "
      "2 usage or input error."};
  app.set_version_flag("--version", std::string("npufuse ") + NPUFUSE_VERSION);
  app.require_subcommand(1);

  std::vector<Registered> commands = {
      register_parse(app),   register_inspect(app), register_analyze(app), register_apply(app),
      register_verify(app),  register_explain(app), register_ops(app),     register_rules(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsage;
  }

  for (auto& c : commands) {
    if (c.app->parsed()) {
      try {
        return c.run();
      } catch (const std::exception& e) {
        std::fflush(stdout);
        fmt::print(stderr, "npufuse: error: {}\n", e.what());
        return kUsage;
      }
    }
  }
  return kUsage;
}
