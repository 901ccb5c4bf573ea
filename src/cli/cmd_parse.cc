// npufuse parse FILE... [--dump-ast] [--quiet] [--jobs N]
// The files are read and parsed on every core (util/work_queue); what each
// file prints, on stdout and stderr, comes out in the order the files were
// given, as if they had been parsed one after the other.
#include <fmt/format.h>

#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "frontend/ast_dump.h"
#include "frontend/parser.h"
#include "util/file_io.h"
#include "util/work_queue.h"

namespace npufuse::cli {

namespace {

struct ParseOptions {
  std::vector<std::string> files;
  bool dump = false;
  bool quiet = false;
  bool null_separated = false;  // for tools: one record per file, '\0'-terminated
  unsigned jobs = 0;            // 0: one per core
};

// What one file prints: `out` on stdout (possibly nothing), `error`
// ("file:line:col: message") on stderr when it failed.
struct FileOutput {
  bool ok = false;
  std::string out;
  std::string error;
};

FileOutput parse_one(const ParseOptions& opt, const std::string& path) {
  FileOutput r;
  std::unique_ptr<frontend::ParsedFile> file;
  try {
    file = frontend::parse_file(path, read_file(path));
    r.ok = true;
  } catch (const frontend::SyntaxError& e) {
    r.error = e.diagnostic().format();
  } catch (const npufuse::FileError& e) {
    r.error = e.what();
  } catch (const std::exception& e) {
    r.error = fmt::format("{}: {}", path, e.what());
  }
  if (opt.null_separated) {
    // Every file gets a record, so a reader can pair records with files.
    if (r.ok) frontend::dump_ast(file->module, r.out);
    else r.out = "!error " + r.error;
    r.out += '\0';
    return r;
  }
  if (!r.ok || opt.quiet) return r;
  if (opt.dump) {
    frontend::dump_ast(file->module, r.out);
    r.out += '\n';
  } else {
    r.out = fmt::format("{}: {} statements, {} nodes, {} tokens\n", path, file->module->body.size, file->node_count,
                        file->tokens.size());
  }
  return r;
}

// Hands the files' outputs to stdout/stderr in input order while the workers
// go on parsing: the worker that completes the next file in order becomes the
// writer and writes every output that is ready, outside the lock; the others
// only leave their output behind.
class OrderedWriter {
 public:
  OrderedWriter(const ParseOptions& opt, size_t count) : opt_(opt), slots_(count) {}

  void deliver(size_t i, FileOutput output) {
    {
      std::lock_guard lock(mutex_);
      slots_[i] = std::move(output);
      if (writing_) return;
      writing_ = true;
    }
    for (;;) {
      std::vector<FileOutput> ready;
      {
        std::lock_guard lock(mutex_);
        for (; next_ < slots_.size() && slots_[next_]; ++next_) {
          ready.push_back(std::move(*slots_[next_]));
          slots_[next_].reset();
        }
        if (ready.empty()) {
          writing_ = false;
          return;
        }
      }
      for (const FileOutput& r : ready) write(r);
    }
  }

  int failures() const { return failures_; }

 private:
  void write(const FileOutput& r) {
    if (!r.ok) ++failures_;
    if (!r.out.empty()) std::fwrite(r.out.data(), 1, r.out.size(), stdout);
    if (!r.ok && !opt_.null_separated) {
      std::fflush(stdout);
      fmt::print(stderr, "{}\n", r.error);
    }
  }

  const ParseOptions& opt_;
  std::mutex mutex_;
  std::vector<std::optional<FileOutput>> slots_;
  size_t next_ = 0;       // the first file not yet written
  bool writing_ = false;  // some worker is writing
  int failures_ = 0;      // touched by the writer only
};

int run_parse(const ParseOptions& opt) {
  OrderedWriter writer(opt, opt.files.size());
  util::run_parallel(opt.files.size(), opt.jobs,
                     [&](size_t i) { writer.deliver(i, parse_one(opt, opt.files[i])); });
  if (writer.failures() == 0) return kOk;
  return opt.files.size() == 1 && !opt.quiet ? kUsage : kFindings;
}

}  // namespace

Registered register_parse(CLI::App& parent) {
  auto* cmd = parent.add_subcommand("parse", "Parse Python files; optionally print the AST like CPython's ast.dump");
  static ParseOptions opt;
  cmd->add_option("files", opt.files, "Python source files")->required();
  cmd->add_flag("--dump-ast", opt.dump, "Print ast.dump(ast.parse(src), include_attributes=True)");
  cmd->add_flag("--quiet", opt.quiet, "Print nothing; exit non-zero if any file fails");
  cmd->add_option("--jobs", opt.jobs, "Files parsed in parallel (default: one per core); output order is unchanged");
  cmd->add_flag("--null-separated", opt.null_separated,
                "With --dump-ast: one NUL-terminated record per file, '!error MESSAGE' for failures")
      ->group("");
  return {cmd, [] { return run_parse(opt); }};
}

}  // namespace npufuse::cli
