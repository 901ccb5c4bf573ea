#include "scan/tree_scan.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "scan/model_analysis.h"
#include "scan/model_folders.h"
#include "scan/progress_bar.h"
#include "scan/scan_cache.h"
#include "scan/shared_inputs.h"
#include "util/work_queue.h"
#include "util/file_io.h"

namespace npufuse::scan {

namespace fs = std::filesystem;

namespace {

// Writes the model's plans, or removes those an earlier run left when it
// fails now, so that the folder never shows a plan for other bytes.
void write_plans(const std::string& out_dir, const ModelResult& r) {
  fs::path stem = fs::path(out_dir) / r.name;
  fs::path json_path = stem.string() + ".plan.json", md_path = stem.string() + ".plan.md";
  std::error_code ec;
  if (r.failed) {
    fs::remove(json_path, ec);
    fs::remove(md_path, ec);
    return;
  }
  fs::create_directories(json_path.parent_path(), ec);
  write_file_atomic(json_path.string(), r.plan_json, Flush::RenameOnly);
  write_file_atomic(md_path.string(), r.markdown, Flush::RenameOnly);
}

ModelResult failed_result(const std::string& name, const std::string& error) {
  ModelResult r;
  r.name = name;
  r.failed = true;
  r.error = error;
  return r;
}

// One model's turn: from the cache when its key is there, analysed otherwise.
ModelResult scan_one(const ModelFolder& folder, const ScanOptions& o, const SharedInputs& shared,
                     const ScanCache* cache) {
  // Without a cache there is no key to work out (it reads and hashes every file).
  std::string key;
  if (cache) {
    try {
      key = cache_key(folder, o, shared.fingerprint);
    } catch (const std::exception& e) {
      return failed_result(folder.name, e.what());
    }
    if (auto hit = cache->load(key)) {
      hit->name = folder.name;
      return std::move(*hit);
    }
  }
  ModelResult r = analyze_model(folder, o, shared);
  if (cache) cache->store(key, r);
  return r;
}

}  // namespace

std::string cache_dir_of(const ScanOptions& o) {
  return o.cache_dir.empty() ? (fs::path(o.out_dir) / ".npufuse-cache").string() : o.cache_dir;
}

ScanReport run_tree_scan(const ScanOptions& o) {
  auto start = std::chrono::steady_clock::now();
  std::string cache_dir = cache_dir_of(o);
  std::vector<ModelFolder> folders = find_model_folders(o.root, {o.out_dir, cache_dir});
  if (folders.empty()) throw std::invalid_argument(o.root + ": no model folder (model.py or modeling_*.py) below it");

  SharedInputs shared = SharedInputs::load(o.analysis.rules_dir, o.analysis.catalog_dir, /*with_fingerprint=*/o.use_cache);
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (!fs::is_directory(o.out_dir, ec)) throw FileError(o.out_dir + ": cannot create the output folder");
  ScanCache cache(cache_dir);
  const ScanCache* use_cache = o.use_cache ? &cache : nullptr;

  std::vector<nlohmann::json> rows(folders.size());
  ProgressBar bar(stderr, folders.size(), o.progress);
  util::run_parallel(folders.size(), o.jobs, [&](size_t i) {
    ModelResult r = scan_one(folders[i], o, shared, use_cache);
    try {
      write_plans(o.out_dir, r);
    } catch (const std::exception& e) {
      r = failed_result(r.name, e.what());
    }
    rows[i] = model_row(r);
    bar.advance(folders[i].name);
  });
  bar.finish();

  ScanReport report;
  report.summary = summary_json(o.root, rows);
  report.counts = count_rows(rows);
  write_file_atomic((fs::path(o.out_dir) / "summary.json").string(), report.summary.dump(2) + "\n");
  write_file_atomic((fs::path(o.out_dir) / "summary.md").string(), summary_markdown(report.summary, o.lang));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace npufuse::scan
