// bench/scale: how a tree scan grows with the number of models. For each N
// (default 10, 100, 1000) it writes a synthetic tree (synthetic_tree.h),
// then scans it cold (no cache) in a child process, so that each N's peak
// RSS is its own, and prints files/s, MB/s, peak RSS and the per-file time
// against the previous N (1.00 = linear). Targets: 1000 files (~30 MB) in
// under 3 s on 2 cores, peak RSS under 500 MB.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "scan/tree_scan.h"
#include "util/work_queue.h"
#include "synthetic_tree.h"

namespace {

namespace fs = std::filesystem;

struct Measurement {
  double seconds = 0;
  size_t models = 0, failed = 0;
  long peak_rss_kb = 0;
};

// The scan in a child: its wall time through a pipe, its peak RSS from wait4.
Measurement scan_in_child(const std::string& tree, const std::string& out, unsigned jobs) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(2);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    npufuse::scan::ScanOptions o;
    o.root = tree;
    o.out_dir = out;
    o.use_cache = false;
    o.jobs = jobs;
    o.tool_version = "bench";
    npufuse::scan::ScanReport r = npufuse::scan::run_tree_scan(o);
    double values[3] = {r.seconds, static_cast<double>(r.counts.models), static_cast<double>(r.counts.failed)};
    if (write(fds[1], values, sizeof values) != sizeof values) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  double values[3] = {0, 0, 0};
  ssize_t got = read(fds[0], values, sizeof values);
  close(fds[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  if (got != sizeof values || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "scale_bench: the scan of %s failed\n", tree.c_str());
    std::exit(1);
  }
  return {values[0], static_cast<size_t>(values[1]), static_cast<size_t>(values[2]), usage.ru_maxrss};
}

std::vector<size_t> parse_sizes(const std::string& s) {
  std::vector<size_t> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t comma = s.find(',', start);
    out.push_back(std::stoul(s.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {10, 100, 1000};
  unsigned jobs = 0;
  std::string work = (fs::temp_directory_path() / ("npufuse_scale_" + std::to_string(getpid()))).string();
  bool keep = false;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (arg == "--sizes" && a + 1 < argc) sizes = parse_sizes(argv[++a]);
    else if (arg == "--jobs" && a + 1 < argc) jobs = static_cast<unsigned>(std::atoi(argv[++a]));
    else if (arg == "--work" && a + 1 < argc) work = argv[++a], keep = true;
    else {
      std::fprintf(stderr, "usage: scale_bench [--sizes 10,100,1000] [--jobs N] [--work DIR (kept)]\n");
      return 2;
    }
  }
  std::string models = std::string(NPUFUSE_SOURCE_DIR) + "/tests/models";
  std::printf("tree scan, cold (no cache), %u job(s)\n", jobs ? jobs : npufuse::util::default_jobs());
  std::printf("%7s %9s %9s %9s %9s %11s %12s\n", "files", "MB", "seconds", "files/s", "MB/s", "peak RSS", "growth");
  double previous_per_file = 0;
  Measurement last;
  double last_mb = 0;
  for (size_t n : sizes) {
    std::string tree = work + "/tree_" + std::to_string(n), out = work + "/out_" + std::to_string(n);
    fs::remove_all(tree);
    fs::remove_all(out);
    npufuse::bench::TreeStats stats = npufuse::bench::build_synthetic_tree(models, tree, n);
    Measurement m = scan_in_child(tree, out, jobs);
    double mb = static_cast<double>(stats.bytes) / (1024.0 * 1024.0);
    double per_file = m.seconds / static_cast<double>(stats.files);
    std::string growth = previous_per_file > 0 ? std::to_string(per_file / previous_per_file).substr(0, 4) + "x/file" : "-";
    std::printf("%7zu %9.1f %9.2f %9.1f %9.2f %8.0f MB %12s%s\n", stats.files, mb, m.seconds, stats.files / m.seconds,
                mb / m.seconds, static_cast<double>(m.peak_rss_kb) / 1024.0, growth.c_str(),
                m.failed ? "  (some models failed!)" : "");
    previous_per_file = per_file;
    last = m;
    last_mb = mb;
  }
  // Removed at the end, not between sizes: on ext4 a file created within a
  // minute or more of many deletions makes the kernel scan past the deleted
  // inodes (recently_deleted), which a scan would then pay for.
  if (!keep) fs::remove_all(work);
  std::printf("growth: per-file time against the previous N (1.00 = linear)\n");
  std::printf("targets at the largest N (%.1f MB): %.2f s (target < 3 s: %s), peak RSS %.0f MB (target < 500 MB: %s)\n",
              last_mb, last.seconds, last.seconds < 3.0 ? "met" : "MISSED", static_cast<double>(last.peak_rss_kb) / 1024.0,
              last.peak_rss_kb < 500 * 1024 ? "met" : "MISSED");
  return 0;
}
