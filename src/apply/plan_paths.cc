#include "apply/plan_paths.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "apply/apply_error.h"
#include "util/file_io.h"
#include "util/sha256.h"

namespace npufuse::apply {
namespace {

namespace fs = std::filesystem;

// `file` below folder `base` (both as spelt, lexically): the rest of its
// path; nullopt when it is not below it. An empty base is the folder the
// relative paths start from.
std::optional<fs::path> below(const fs::path& file, const fs::path& base) {
  if (base.empty()) {
    if (file.is_absolute() || file.empty() || *file.begin() == "..") return std::nullopt;
    return file;
  }
  if (file.is_absolute() != base.is_absolute()) return std::nullopt;
  auto f = file.begin();
  for (auto b = base.begin(); b != base.end(); ++b, ++f)
    if (f == file.end() || *f != *b) return std::nullopt;
  fs::path rest;
  for (; f != file.end(); ++f) rest /= *f;
  if (rest.empty()) return std::nullopt;
  return rest;
}

// Every id a plan holds: its candidates and their alternatives.
template <typename Visit>
void each_candidate(plan::Plan& p, Visit visit) {
  for (plan::Candidate& c : p.candidates) {
    visit(c);
    for (plan::Candidate& a : c.alternatives) visit(a);
  }
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  if (a == b) return true;
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

std::optional<CandidateIdParts> split_candidate_id(const std::string& id) {
  size_t at = id.find('@');
  if (at == std::string::npos) return std::nullopt;
  size_t colon = id.rfind(':');
  if (colon == std::string::npos || colon <= at + 1 || colon + 1 >= id.size() ||
      !std::isdigit(static_cast<unsigned char>(id[colon + 1])))
    return std::nullopt;
  return CandidateIdParts{id.substr(0, at), id.substr(at + 1, colon - at - 1), id.substr(colon + 1)};
}

PlanFiles::PlanFiles(const plan::Plan& recorded, std::vector<std::string> given)
    : recorded_(recorded), given_(std::move(given)) {}

std::string PlanFiles::now(const std::string& file) const {
  const std::vector<std::string>& analysed = recorded_.options.paths;
  if (given_.empty() || given_ == analysed || given_.size() != analysed.size()) return file;
  const fs::path f = fs::path(file).lexically_normal();
  for (size_t i = 0; i < analysed.size(); ++i) {
    const fs::path was = fs::path(analysed[i]).lexically_normal();
    const fs::path is = fs::path(given_[i]);
    if (f == was) return given_[i];
    // A folder given: the files under it. A file given: the files beside it
    // (its relative imports) and under its folder.
    std::error_code ec;
    bool folder = fs::is_directory(is, ec);
    fs::path was_base = folder ? was : was.parent_path();
    fs::path is_base = folder ? is : is.parent_path();
    if (std::optional<fs::path> rest = below(f, was_base)) {
      // Where the counterpart holds nothing but the recorded path does, the
      // recorded path (the same folder both times, spelt otherwise).
      std::string there = (is_base / *rest).string();
      if (!fs::exists(there, ec) && fs::exists(file, ec)) return file;
      return there;
    }
  }
  return file;
}

bool PlanFiles::is(const std::string& file, const std::string& path) const {
  return same_file(now(file), path) || same_file(file, path);
}

std::string PlanFiles::recorded_file(const std::string& path) const {
  for (const std::string& f : recorded_.files)
    if (f == path) return f;
  for (const std::string& f : recorded_.files)
    if (is(f, path)) return f;
  return "";
}

std::string PlanFiles::recorded_id(const std::string& id) const {
  std::vector<const plan::Candidate*> all;
  for (const plan::Candidate& c : recorded_.candidates) {
    all.push_back(&c);
    for (const plan::Candidate& a : c.alternatives) all.push_back(&a);
  }
  for (const plan::Candidate* c : all)
    if (c->id == id) return id;
  std::optional<CandidateIdParts> asked = split_candidate_id(id);
  if (!asked) return "";
  for (const plan::Candidate* c : all) {
    std::optional<CandidateIdParts> have = split_candidate_id(c->id);
    if (have && have->head == asked->head && have->line == asked->line && is(have->file, asked->file)) return c->id;
  }
  return "";
}

void PlanFiles::check_current(const std::string& plan_path) const {
  if (recorded_.file_hashes.empty())
    throw ApplyError(fmt::format("{}: the plan records no file hashes; run npufuse analyze again", plan_path));
  for (const std::string& file : recorded_.files)
    if (!recorded_.file_hashes.count(file))
      throw ApplyError(fmt::format("{}: {} records no sha256 for this file, so its changes cannot be told; run npufuse "
                                   "analyze again",
                                   file, plan_path));
  for (const auto& [file, recorded] : recorded_.file_hashes) {
    const std::string path = now(file);
    const std::string shown = path == file ? file : fmt::format("{} (read as {})", file, path);
    std::string bytes;
    try {
      bytes = read_file(path);
    } catch (const FileError& e) {
      throw ApplyError(fmt::format("{}: analysed by {} but cannot be read now ({}); give apply the model's paths as they "
                                   "are spelt from here",
                                   shown, plan_path, e.what()));
    }
    std::string hash = util::sha256_hex(bytes);
    if (hash != recorded)
      throw ApplyError(fmt::format(
          "{}: changed since {} was made (sha256 {} there, {} now); run npufuse analyze again and apply the new plan",
          shown, plan_path, recorded.substr(0, 12), hash.substr(0, 12)));
  }
}

void PlanFiles::align(plan::Plan& fresh, const std::string& plan_path) const {
  std::map<std::string, std::string> to_recorded;  // the re-run's spelling -> the plan's
  std::set<std::string> found;
  bool same = fresh.files.size() == recorded_.files.size();
  for (const std::string& f : fresh.files) {
    std::string r = recorded_file(f);
    if (r.empty() || !found.insert(r).second) {
      same = false;
      break;
    }
    to_recorded[f] = r;
  }
  if (!same)
    throw ApplyError(fmt::format("{}: the plan was made for {}, but the paths given load {}", plan_path,
                                 fmt::join(recorded_.files, ", "), fmt::join(fresh.files, ", ")));
  each_candidate(fresh, [&](plan::Candidate& c) {
    std::optional<CandidateIdParts> parts = split_candidate_id(c.id);
    if (!parts) return;
    auto r = to_recorded.find(parts->file);
    if (r != to_recorded.end() && r->second != parts->file) c.id = fmt::format("{}@{}:{}", parts->head, r->second, parts->line);
  });
}

}  // namespace npufuse::apply
