#include "scan/scan_cache.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <system_error>

#include "util/file_io.h"
#include "util/sha256.h"

namespace npufuse::scan {

namespace fs = std::filesystem;

namespace {

// 2: the plan is kept as the text written, with the candidates the summary reads.
constexpr const char* kEntryFormat = "npufuse-scan-cache/2";

void append_field(std::string& out, const std::string& s) {
  out += std::to_string(s.size());
  out += ':';
  out += s;
}

void append_file(std::string& out, const std::string& path) {
  append_field(out, fs::path(path).filename().string());
  append_field(out, util::sha256_hex(read_file(path)));
}

std::string options_text(const ScanOptions& o) {
  const plan::AnalyzeOptions& a = o.analysis;
  nlohmann::json j = {{"chip", a.chip},   {"tp", a.tp},       {"ep", a.ep},
                      {"dp", a.dp},       {"quant", a.quant}, {"stage", a.stage},
                      {"torch_npu_version", a.torch_npu_version}, {"lang", o.lang}};
  return j.dump();
}

}  // namespace

std::string cache_key(const ModelFolder& folder, const ScanOptions& options, const std::string& inputs_fingerprint) {
  std::string in;
  append_field(in, kEntryFormat);
  append_field(in, options.tool_version);
  append_field(in, inputs_fingerprint);
  append_field(in, options_text(options));
  append_field(in, options.analysis.deploy.empty() ? "" : util::sha256_hex(read_file(options.analysis.deploy)));
  append_field(in, folder.dir);
  for (const auto& f : folder.python_files) append_file(in, f);
  std::string config = folder.config.empty() ? options.analysis.config : folder.config;
  if (!config.empty()) append_file(in, config);
  return util::sha256_hex(in);
}

std::string ScanCache::path_of(const std::string& key) const {
  return (fs::path(dir_) / key.substr(0, 2) / (key + ".json")).string();
}

std::optional<ModelResult> ScanCache::load(const std::string& key) const {
  std::error_code ec;
  std::string path = path_of(key);
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  try {
    nlohmann::json j = nlohmann::json::parse(read_file(path));
    if (j.value("format", "") != kEntryFormat || j.value("key", "") != key) return std::nullopt;
    ModelResult r;
    r.name = j.at("name").get<std::string>();
    r.failed = j.at("failed").get<bool>();
    r.plan_json = j.at("plan_json").get<std::string>();
    r.markdown = j.at("markdown").get<std::string>();
    for (const auto& c : j.at("candidates")) r.candidates.push_back({c.at(0), c.at(1), c.at(2)});
    r.error = j.at("error").get<std::string>();
    r.from_cache = true;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;  // a torn or foreign entry is a miss
  }
}

void ScanCache::store(const std::string& key, const ModelResult& r) const {
  nlohmann::json candidates = nlohmann::json::array();
  for (const CandidateSummary& c : r.candidates) candidates.push_back({c.module, c.api, c.status});
  nlohmann::json j = {{"format", kEntryFormat}, {"key", key},       {"name", r.name},
                      {"failed", r.failed},     {"plan_json", r.plan_json}, {"markdown", r.markdown},
                      {"candidates", std::move(candidates)}, {"error", r.error}};
  try {
    std::string path = path_of(key);
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    write_file_atomic(path, j.dump(), Flush::RenameOnly);
  } catch (const std::exception&) {
  }
}

}  // namespace npufuse::scan
