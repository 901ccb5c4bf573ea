#pragma once
// Every subcommand lives in its own file and registers itself here:
// `register_X(app)` adds the CLI11 subcommand with its options and returns the
// function that runs it. Exit codes (docs/cli.md):
//   0 success, 1 findings / not found / failed check where documented,
//   2 usage or input error.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace npufuse::cli {

using Runner = std::function<int()>;

enum ExitCode : int { kOk = 0, kFindings = 1, kUsage = 2 };

struct Registered {
  CLI::App* app;
  Runner run;
};

Registered register_parse(CLI::App& parent);
Registered register_ops(CLI::App& parent);
Registered register_rules(CLI::App& parent);
Registered register_inspect(CLI::App& parent);
Registered register_analyze(CLI::App& parent);
Registered register_apply(CLI::App& parent);
Registered register_verify(CLI::App& parent);

// `apply --verify`: the step-5 loop (cmd_verify.cc).
int run_apply_verify(const std::string& plan, const std::vector<std::string>& paths,
                     const std::vector<std::string>& only, const std::string& out_dir, const std::string& python,
                     const std::string& entry);
Registered register_explain(CLI::App& parent);

}  // namespace npufuse::cli
