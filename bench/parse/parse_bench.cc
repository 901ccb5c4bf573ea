// Parses every .py file under the given directories (or the given files)
// with npufuse and with CPython's ast.parse, all read into memory first, and
// prints both throughputs in MB/s of CPU time and their ratio. Best of
// several rounds.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "frontend/lexer.h"
#include "frontend/parser.h"
#include "util/file_io.h"

namespace {

namespace fs = std::filesystem;

struct Input {
  std::string path;
  std::string bytes;
};

std::vector<Input> collect(int argc, char** argv, int& rounds) {
  std::vector<std::string> paths;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg == "--rounds" && a + 1 < argc) {
      rounds = std::atoi(argv[++a]);
      continue;
    }
    if (fs::is_directory(arg)) {
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file() && e.path().extension() == ".py") paths.push_back(e.path().string());
    } else {
      paths.push_back(arg);
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Input> inputs;
  for (const auto& p : paths) inputs.push_back({p, npufuse::read_file(p)});
  return inputs;
}

// CPython's ast.parse over the same files, timed inside Python after reading
// them. Both sides measure CPU time, so a busy machine skews neither.
double cpython_seconds(const std::vector<Input>& inputs, int rounds) {
  std::string list = (fs::temp_directory_path() / "npufuse_parse_bench_files.txt").string();
  {
    std::ofstream out(list);
    for (const auto& in : inputs) out << in.path << '\n';
  }
  std::string script =
      "import ast, sys, time, warnings\n"
      "warnings.simplefilter('ignore')\n"
      "srcs = [open(p, 'rb').read() for p in open(sys.argv[1]).read().split('\\n') if p]\n"
      "best = 1e30\n"
      "for r in range(int(sys.argv[2])):\n"
      "    t = time.process_time()\n"
      "    for s in srcs:\n"
      "        try: ast.parse(s)\n"
      "        except (SyntaxError, ValueError): pass\n"
      "    best = min(best, time.process_time() - t)\n"
      "print(best)\n";
  std::string script_path = (fs::temp_directory_path() / "npufuse_parse_bench.py").string();
  std::ofstream(script_path) << script;
  std::string cmd = "/usr/bin/python3 " + script_path + " " + list + " " + std::to_string(rounds);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  double seconds = -1;
  if (std::fscanf(p, "%lf", &seconds) != 1) seconds = -1;
  pclose(p);
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace npufuse::frontend;
  int rounds = 3;
  std::vector<Input> inputs = collect(argc, argv, rounds);
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: parse_bench [--rounds N] DIR_OR_FILE...\n");
    return 2;
  }
  size_t bytes = 0;
  for (const auto& in : inputs) bytes += in.bytes.size();

  double best_lex = 1e30, best_parse = 1e30;
  size_t failed = 0, nodes = 0;
  for (int r = 0; r < rounds; ++r) {
    std::clock_t t0 = std::clock();
    for (const auto& in : inputs) {
      SourceFile src(in.path, in.bytes);
      try {
        (void)tokenize(src);
      } catch (const SyntaxError&) {
      }
    }
    std::clock_t t1 = std::clock();
    failed = nodes = 0;
    for (const auto& in : inputs) {
      try {
        nodes += parse_file(in.path, in.bytes)->node_count;
      } catch (const SyntaxError&) {
        ++failed;
      }
    }
    std::clock_t t2 = std::clock();
    best_lex = std::min(best_lex, double(t1 - t0) / CLOCKS_PER_SEC);
    best_parse = std::min(best_parse, double(t2 - t1) / CLOCKS_PER_SEC);
  }
  double mb = bytes / 1e6;
  std::printf("%zu files, %.1f MB, %zu nodes, %zu rejected\n", inputs.size(), mb, nodes, failed);
  std::printf("npufuse lex only:       %7.1f MB/s\n", mb / best_lex);
  std::printf("npufuse parse_file:     %7.1f MB/s\n", mb / best_parse);
  double py = cpython_seconds(inputs, rounds);
  if (py > 0) {
    std::printf("CPython ast.parse:      %7.1f MB/s\n", mb / py);
    std::printf("ratio npufuse/CPython:  %7.1fx\n", py / best_parse);
  } else {
    std::printf("CPython ast.parse: not measured (/usr/bin/python3 failed)\n");
  }
  return 0;
}
