// Lexes every file given on the command line several times and prints the
// lexer's throughput in MB/s (best round, in CPU time so that other work on
// a shared machine does not count). Not a test: run it by hand, e.g.
//   build/bench/lex/lex_bench $(find /usr/lib/python3.11 -name '*.py')
#include <malloc.h>

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "frontend/lexer.h"
#include "util/file_io.h"

int main(int argc, char** argv) {
  using namespace npufuse::frontend;
  // Keep freed token vectors in the process between rounds: otherwise every
  // round measures the kernel mapping fresh pages, not the lexer.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  std::vector<SourceFile> files;
  size_t bytes = 0;
  for (int a = 1; a < argc; ++a) {
    try {
      files.emplace_back(argv[a], npufuse::read_file(argv[a]));
      bytes += files.back().text().size();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "skipped: %s\n", e.what());
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: lex_bench FILE...\n");
    return 2;
  }
  double best = 1e30;
  size_t tokens = 0, failed = 0;
  for (int round = 0; round < 5; ++round) {
    tokens = failed = 0;
    std::clock_t start = std::clock();
    for (const SourceFile& f : files) {
      try {
        tokens += tokenize(f).size();
      } catch (const SyntaxError&) {
        ++failed;
      }
    }
    best = std::min(best, static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC);
  }
  std::printf("%zu files, %.1f MB, %zu tokens, %zu with syntax errors: %.1f MB/s\n", files.size(), bytes / 1e6,
              tokens, failed, bytes / 1e6 / best);
  return 0;
}
