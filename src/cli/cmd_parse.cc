// npufuse parse FILE... [--dump-ast] [--quiet]
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "cli/command.h"
#include "frontend/ast_dump.h"
#include "frontend/parser.h"
#include "util/file_io.h"

namespace npufuse::cli {

namespace {

struct ParseOptions {
  std::vector<std::string> files;
  bool dump = false;
  bool quiet = false;
  bool null_separated = false;  // for tools: one record per file, '\0'-terminated
};

// Parses one file; on failure returns false and fills `error` with
// "file:line:col: message".
bool parse_one(const std::string& path, std::unique_ptr<frontend::ParsedFile>& out, std::string& error) {
  try {
    out = frontend::parse_file(path, read_file(path));
    return true;
  } catch (const frontend::SyntaxError& e) {
    error = e.diagnostic().format();
  } catch (const npufuse::FileError& e) {
    error = e.what();
  }
  return false;
}

int run_parse(const ParseOptions& opt) {
  int failures = 0;
  std::string text;
  for (const std::string& path : opt.files) {
    std::unique_ptr<frontend::ParsedFile> file;
    std::string error;
    bool ok = parse_one(path, file, error);
    if (opt.null_separated) {
      // Every file gets a record, so a reader can pair records with files.
      text.clear();
      if (ok) {
        frontend::dump_ast(file->module, text);
      } else {
        text = "!error " + error;
        ++failures;
      }
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\0', stdout);
      continue;
    }
    if (!ok) {
      std::fflush(stdout);
      fmt::print(stderr, "{}\n", error);
      ++failures;
      continue;
    }
    if (opt.quiet) continue;
    if (opt.dump) {
      text.clear();
      frontend::dump_ast(file->module, text);
      text += '\n';
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      fmt::print("{}: {} statements, {} nodes, {} tokens\n", path, file->module->body.size, file->node_count,
                 file->tokens.size());
    }
  }
  if (failures == 0) return kOk;
  return opt.files.size() == 1 && !opt.quiet ? kUsage : kFindings;
}

}  // namespace

Registered register_parse(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("parse", "Parse Python files; optionally print the AST like CPython's ast.dump");
  static ParseOptions opt;
  cmd->add_option("files", opt.files, "Python source files")->required();
  cmd->add_flag("--dump-ast", opt.dump, "Print ast.dump(ast.parse(src), include_attributes=True)");
  cmd->add_flag("--quiet", opt.quiet, "Print nothing; exit non-zero if any file fails");
  cmd->add_flag("--null-separated", opt.null_separated,
                "With --dump-ast: one NUL-terminated record per file, '!error MESSAGE' for failures")
      ->group("");
  return {cmd, [] { return run_parse(opt); }};
}

}  // namespace npufuse::cli
