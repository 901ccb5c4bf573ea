// npufuse inspect PATH... [--config FILE] [--format md|json] [--lang en|zh]
// Workflow step 1: what the model is made of, read statically.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/command.h"
#include "frontend/diagnostic.h"
#include "model/config_schema.h"
#include "model/evaluator.h"
#include "model/inventory.h"
#include "model/module_roles.h"
#include "model/inventory_json.h"
#include "model/inventory_markdown.h"
#include "scan/model_folders.h"
#include "util/file_io.h"

namespace npufuse::cli {

namespace {

struct InspectOptions {
  std::vector<std::string> paths;
  std::string config;
  std::string format = "md";
  std::string lang = "en";
  std::string dataflow_class;  // print this class's inlined forward instead of the inventory
};

// The inlined forward of one class, one op per line, for reading what the
// matcher sees.
std::string dataflow_text(const model::SourceSet& sources, const model::ModelConfig& config, const std::string& cls_name) {
  const model::ClassDecl* cls = sources.find_class(cls_name);
  if (!cls) throw FileError(fmt::format("no class named '{}' in the given files", cls_name));
  model::ConfigSchema schema = model::ConfigSchema::discover(sources);
  model::Evaluator ev(sources, config, schema);
  model::RoleTable roles = model::RoleTable::infer(sources, ev);
  model::RoleTableSubmodules lookup(roles, &config);
  // As the matcher builds it: a loop over the decoder layers unrolled.
  return model::build_inlined_forward(sources, *cls, lookup, 8, /*unroll_module_loops=*/true).dump();
}

int run_inspect(const InspectOptions& o) {
  try {
    model::ModelConfig config;
    std::string config_path = o.config.empty() ? scan::folder_config(o.paths) : o.config;
    if (!config_path.empty()) config = model::ModelConfig::load(config_path);
    model::SourceSet sources = model::SourceSet::load(o.paths);
    if (!o.dataflow_class.empty()) {
      std::string text = dataflow_text(sources, config, o.dataflow_class);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return kOk;
    }
    model::Inventory inv = model::build_inventory(sources, config);
    std::string text = o.format == "json" ? model::inventory_to_json(inv).dump(2) + "\n"
                                          : model::inventory_to_markdown(inv, o.lang == "zh" ? model::Lang::Zh : model::Lang::En);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kOk;
  } catch (const frontend::SyntaxError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}\n", e.diagnostic().format());
  } catch (const FileError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "npufuse inspect: {}\n", e.what());
  }
  return kUsage;
}

}  // namespace

Registered register_inspect(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("inspect", "Workflow step 1: module tree, dataflow and sub-chain inventory");
  static InspectOptions o;
  cmd->add_option("paths", o.paths, "Model files or directories")->required();
  cmd->add_option("--config", o.config, "HF-style config.json binding the model's symbols");
  cmd->add_option("--format", o.format, "md or json")->check(CLI::IsMember({"md", "json"}));
  cmd->add_option("--lang", o.lang, "en or zh")->check(CLI::IsMember({"en", "zh"}));
  cmd->add_option("--dataflow", o.dataflow_class,
                  "Print the SSA dataflow of CLASS's forward (submodules and helpers inlined) instead of the inventory");
  return {cmd, [] { return run_inspect(o); }};
}

}  // namespace npufuse::cli
