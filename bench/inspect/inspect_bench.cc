// For each file argument: the median wall time of one `inspect` (load and
// parse the file with its relative imports, build the inventory, render
// Markdown and JSON) over several rounds. For each directory argument: every
// .py file under it inspected as its own model, once per round, with the
// throughput in models/s and KB/s of the best round.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "model/inventory.h"
#include "model/inventory_json.h"
#include "model/inventory_markdown.h"
#include "model/model_config.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// One inspect; returns the rendered size so the work cannot be optimised away.
size_t inspect_once(const std::string& path) {
  using namespace npufuse::model;
  SourceSet sources = SourceSet::load({path});
  ModelConfig config;
  Inventory inv = build_inventory(sources, config);
  return inventory_to_markdown(inv, Lang::En).size() + inventory_to_json(inv).dump().size();
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

void bench_file(const std::string& path, int rounds) {
  std::vector<double> times;
  size_t sink = 0;
  for (int r = 0; r < rounds; ++r) {
    auto t = Clock::now();
    sink += inspect_once(path);
    times.push_back(ms_since(t));
  }
  std::sort(times.begin(), times.end());
  std::printf("%-60s %7.1f KB  median %7.2f ms  min %7.2f ms  (%d rounds, %zu bytes out)\n", path.c_str(),
              static_cast<double>(fs::file_size(path)) / 1024.0, times[times.size() / 2], times.front(), rounds,
              sink / static_cast<size_t>(rounds));
}

void bench_directory(const std::string& dir, int rounds) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".py") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  size_t bytes = 0;
  for (const auto& f : files) bytes += fs::file_size(f);
  double best = 1e300;
  int failed = 0;
  for (int r = 0; r < rounds; ++r) {
    failed = 0;
    auto t = Clock::now();
    for (const auto& f : files) {
      try {
        inspect_once(f);
      } catch (const std::exception&) {
        ++failed;  // a file that does not parse on its own still counts its time
      }
    }
    best = std::min(best, ms_since(t));
  }
  std::printf("%-60s %zu files, %.1f KB: %.1f ms, %.0f models/s, %.0f KB/s (best of %d; %d failed)\n", dir.c_str(), files.size(),
              static_cast<double>(bytes) / 1024.0, best, 1000.0 * static_cast<double>(files.size()) / best,
              static_cast<double>(bytes) / 1024.0 * 1000.0 / best, rounds, failed);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 21;
  std::vector<std::string> args;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg == "--rounds" && a + 1 < argc) rounds = std::max(1, std::atoi(argv[++a]));
    else args.push_back(arg);
  }
  if (args.empty()) {
    std::fprintf(stderr, "usage: inspect_bench [--rounds N] FILE_OR_DIR...\n");
    return 2;
  }
  for (const auto& a : args) {
    try {
      if (fs::is_directory(a)) bench_directory(a, rounds);
      else bench_file(a, rounds);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", a.c_str(), e.what());
      return 1;
    }
  }
  return 0;
}
