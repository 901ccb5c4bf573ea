// For each model file: the median wall time of one `analyze` (everything
// `npufuse analyze` does, rendering the Markdown and JSON plans included),
// the median of each stage the plan builder reports, and the median of a
// step-1 `inspect` of the same file as the baseline, all over the same
// rounds. The target is a median of at most 50 ms for a ~30 KB file.
// On a machine shared with other work the wall time measures the queue as
// much as npufuse; the process CPU time of each analyze is printed beside it
// (one thread, so CPU time is the wall time an idle machine would show).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/inventory.h"
#include "model/inventory_json.h"
#include "model/model_config.h"
#include "plan/analyze.h"
#include "report/plan_json.h"
#include "report/plan_markdown.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One analyze as the CLI does it, rendering included (its time goes to
// `render_ms`); returns the rendered size so the work cannot be optimised away.
size_t analyze_once(const npufuse::plan::AnalyzeOptions& options, npufuse::plan::StageTimes* times, double* render_ms) {
  using namespace npufuse;
  plan::Plan plan = plan::analyze(options, times);
  auto t = Clock::now();
  size_t size = report::plan_to_markdown(plan, report::Lang::En).size() + report::plan_to_json(plan).dump().size();
  *render_ms = ms_since(t);
  return size;
}

size_t inspect_once(const std::string& path, const std::string& config_path) {
  using namespace npufuse::model;
  ModelConfig config;
  if (!config_path.empty()) config = ModelConfig::load(config_path);
  SourceSet sources = SourceSet::load({path});
  return inventory_to_json(build_inventory(sources, config)).dump().size();
}

void bench_file(const std::string& path, const std::string& config, int rounds) {
  npufuse::plan::AnalyzeOptions options;
  options.paths = {path};
  options.config = config;
  std::vector<double> analyze_ms, analyze_cpu_ms, inspect_ms;
  std::map<std::string, std::vector<double>> stage_ms;
  std::vector<std::string> stage_order;
  size_t sink = 0;
  for (int r = 0; r < rounds; ++r) {
    // Alternate the two so that machine load affects both alike.
    auto t = Clock::now();
    sink += inspect_once(path, config);
    inspect_ms.push_back(ms_since(t));

    npufuse::plan::StageTimes times;
    double render_ms = 0;
    t = Clock::now();
    double cpu = cpu_ms();
    sink += analyze_once(options, &times, &render_ms);
    analyze_ms.push_back(ms_since(t));
    analyze_cpu_ms.push_back(cpu_ms() - cpu);
    times.ms.emplace_back("render", render_ms);
    for (const auto& [stage, ms] : times.ms) {
      if (!stage_ms.count(stage)) stage_order.push_back(stage);
      stage_ms[stage].push_back(ms);
    }
  }
  double a = median(analyze_ms), i = median(inspect_ms);
  std::printf("%s%s%s (%.1f KB, %d rounds, %zu bytes out)\n", path.c_str(), config.empty() ? "" : " with ", config.c_str(), static_cast<double>(fs::file_size(path)) / 1024.0,
              rounds, sink / static_cast<size_t>(rounds));
  std::printf("  analyze  median %8.2f ms  min %8.2f ms  %s\n", a, *std::min_element(analyze_ms.begin(), analyze_ms.end()),
              a <= 50.0 ? "(target <= 50 ms: met)" : "(target <= 50 ms: MISSED)");
  double c = median(analyze_cpu_ms);
  std::printf("  analyze  CPU time median %8.2f ms  %s\n", c,
              c <= 50.0 ? "(target <= 50 ms: met)" : "(target <= 50 ms: MISSED)");
  std::printf("  inspect  median %8.2f ms  (baseline; analyze / inspect = %.2fx)\n", i, i > 0 ? a / i : 0.0);
  for (const auto& stage : stage_order) {
    double s = median(stage_ms[stage]);
    std::printf("    %-8s median %8.2f ms  (%4.1f%% of analyze)\n", stage.c_str(), s, a > 0 ? 100.0 * s / a : 0.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 21;
  std::string config;
  std::vector<std::string> files;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg == "--rounds" && a + 1 < argc) rounds = std::max(1, std::atoi(argv[++a]));
    else if (arg == "--config" && a + 1 < argc) config = argv[++a];
    else files.push_back(arg);
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: analyze_bench [--rounds N] [--config config.json] MODEL.py...\n");
    return 2;
  }
  for (const auto& f : files) {
    // Without --config, a config.json beside the model file binds its symbols, as in the test models.
    std::string file_config = config;
    if (file_config.empty() && fs::exists(fs::path(f).parent_path() / "config.json"))
      file_config = (fs::path(f).parent_path() / "config.json").string();
    try {
      bench_file(f, file_config, rounds);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", f.c_str(), e.what());
      return 1;
    }
  }
  return 0;
}
