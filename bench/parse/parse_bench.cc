// The parser against CPython's ast.parse on the same files, in the same run.
//
// End to end (the figure that counts): `npufuse parse --quiet FILE...` run
// as a process, reading and parsing every file on one core (--jobs 1) and on
// every core, against one CPython process reading the same files and calling
// ast.parse on each (CPython parses on one core: the GIL). Wall time, best of
// several rounds, files in the page cache for both. Then the in-process
// figures: the lexer alone and parse_file alone on one thread, in MB/s of CPU
// time over files already in memory, against ast.parse over bytes already
// in memory, also in CPU time.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "frontend/lexer.h"
#include "frontend/parser.h"
#include "util/file_io.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct Input {
  std::string path;
  std::string bytes;
};

struct Args {
  int rounds = 3;
  std::string npufuse = NPUFUSE_BINARY;
  std::vector<std::string> paths;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--rounds" && i + 1 < argc) {
      a.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--npufuse" && i + 1 < argc) {
      a.npufuse = argv[++i];
    } else if (fs::is_directory(arg)) {
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file() && e.path().extension() == ".py") a.paths.push_back(e.path().string());
    } else {
      a.paths.push_back(arg);
    }
  }
  std::sort(a.paths.begin(), a.paths.end());
  return a;
}

// CPython's side, in one process: per round, the wall and CPU time of
// reading every file and parsing it (end to end), and the CPU time of
// ast.parse alone over the bytes read before. Best of the rounds.
struct CPythonTimes {
  bool ok = false;
  double end_to_end_wall = 0, parse_cpu = 0;
};

CPythonTimes cpython_times(const std::string& list, int rounds) {
  std::string script =
      "import ast, sys, time, warnings\n"
      "warnings.simplefilter('ignore')\n"
      "paths = [p for p in open(sys.argv[1]).read().split('\\n') if p]\n"
      "def parse(s):\n"
      "    try: ast.parse(s)\n"
      "    except (SyntaxError, ValueError): pass\n"
      "e2e = cpu = 1e30\n"
      "for r in range(int(sys.argv[2])):\n"
      "    t = time.perf_counter()\n"
      "    for p in paths:\n"
      "        with open(p, 'rb') as f: parse(f.read())\n"
      "    e2e = min(e2e, time.perf_counter() - t)\n"
      "srcs = [open(p, 'rb').read() for p in paths]\n"
      "for r in range(int(sys.argv[2])):\n"
      "    t = time.process_time()\n"
      "    for s in srcs: parse(s)\n"
      "    cpu = min(cpu, time.process_time() - t)\n"
      "print(e2e, cpu)\n";
  std::string script_path = (fs::temp_directory_path() / "npufuse_parse_bench.py").string();
  std::ofstream(script_path) << script;
  std::string cmd = "/usr/bin/python3 " + script_path + " " + list + " " + std::to_string(rounds);
  CPythonTimes t;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return t;
  t.ok = std::fscanf(p, "%lf %lf", &t.end_to_end_wall, &t.parse_cpu) == 2;
  t.ok = pclose(p) == 0 && t.ok;
  return t;
}

// Wall seconds of `npufuse parse --quiet --jobs N FILE...`, best of the
// rounds; stdout and stderr (the files CPython rejects too) go to /dev/null.
// Negative when it could not run or exited with a status other than 0 or 1.
double npufuse_seconds(const Args& a, unsigned jobs) {
  std::vector<std::string> words = {a.npufuse, "parse", "--quiet", "--jobs", std::to_string(jobs)};
  words.insert(words.end(), a.paths.begin(), a.paths.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  double best = 1e30;
  for (int r = 0; r < a.rounds; ++r) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    auto t0 = std::chrono::steady_clock::now();
    pid_t pid;
    int rc = posix_spawn(&pid, a.npufuse.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return -1;
    int status = 0;
    waitpid(pid, &status, 0);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) return -1;
    best = std::min(best, s);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace npufuse::frontend;
  Args args = parse_args(argc, argv);
  if (args.paths.empty()) {
    std::fprintf(stderr, "usage: parse_bench [--rounds N] [--npufuse BIN] DIR_OR_FILE...\n");
    return 2;
  }
  std::vector<Input> inputs;
  size_t bytes = 0;
  for (const auto& p : args.paths) {
    inputs.push_back({p, npufuse::read_file(p)});
    bytes += inputs.back().bytes.size();
  }
  std::string list = (fs::temp_directory_path() / "npufuse_parse_bench_files.txt").string();
  {
    std::ofstream out(list);
    for (const auto& p : args.paths) out << p << '\n';
  }
  double mb = bytes / 1e6;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());

  // In-process, one thread, CPU time over files in memory.
  double best_lex = 1e30, best_parse = 1e30;
  size_t failed = 0, nodes = 0;
  for (int r = 0; r < args.rounds; ++r) {
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

  double e2e_one = npufuse_seconds(args, 1);
  double e2e_all = npufuse_seconds(args, cores);
  CPythonTimes py = cpython_times(list, args.rounds);

  std::printf("%zu files, %.1f MB, %zu nodes, %zu rejected; %u cores, best of %d rounds\n", inputs.size(), mb, nodes,
              failed, cores, args.rounds);
  std::printf("end to end (wall: read + parse every file)\n");
  if (py.ok) std::printf("  CPython ast.parse, one process:         %7.3f s  %7.1f MB/s\n", py.end_to_end_wall,
                         mb / py.end_to_end_wall);
  else std::printf("  CPython ast.parse: not measured (/usr/bin/python3 failed)\n");
  auto row = [&](const char* label, double s) {
    if (s < 0) {
      std::printf("  %s not measured (%s did not run)\n", label, args.npufuse.c_str());
      return;
    }
    std::printf("  %s %7.3f s  %7.1f MB/s", label, s, mb / s);
    if (py.ok) std::printf("  %5.1fx CPython", py.end_to_end_wall / s);
    std::printf("\n");
  };
  row("npufuse parse --quiet --jobs 1:        ", e2e_one);
  row(cores == 1 ? "npufuse parse --quiet (1 core):        " : "npufuse parse --quiet (all cores):     ", e2e_all);
  std::printf("in process, one thread (CPU time, files in memory)\n");
  std::printf("  npufuse lex only:                      %7.1f MB/s\n", mb / best_lex);
  std::printf("  npufuse parse_file:                    %7.1f MB/s", mb / best_parse);
  if (py.ok) std::printf("  %5.1fx CPython", py.parse_cpu / best_parse);
  std::printf("\n");
  if (py.ok) std::printf("  CPython ast.parse:                     %7.1f MB/s\n", mb / py.parse_cpu);
  if (py.ok && e2e_all > 0)
    std::printf("ratio npufuse/CPython, end to end on %u cores: %.1fx\n", cores, py.end_to_end_wall / e2e_all);
  return 0;
}
