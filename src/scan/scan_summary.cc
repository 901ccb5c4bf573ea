#include "scan/scan_summary.h"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "report/plan_names.h"

namespace npufuse::scan {

namespace {

// Best first: a model's cell shows the furthest any of its candidates got.
const std::vector<std::string>& status_order() {
  static const std::vector<std::string> order = {"candidate", "candidate_with_prerequisites", "not_applicable",
                                                 "no_fused_op"};
  return order;
}

size_t status_rank(const std::string& status) {
  const auto& order = status_order();
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] == status) return i;
  return order.size();
}

std::string opportunity_api(const std::vector<std::string>& apis) {
  std::string api;
  for (const std::string& a : apis) {
    if (!api.empty()) api += "+";
    api += a;
  }
  return api.empty() ? "-" : api;
}

std::string model_state(const ModelResult& r) {
  if (r.failed) return "failed";
  return r.from_cache ? "cached" : "analysed";
}

}  // namespace

nlohmann::json model_row(const ModelResult& r) {
  nlohmann::json row = {{"name", r.name}, {"state", model_state(r)}, {"from_cache", r.from_cache}};
  if (r.failed) {
    row["error"] = r.error;
    return row;
  }
  row["plan"] = r.name + ".plan.json";
  nlohmann::json statuses = nlohmann::json::object();
  for (const auto& s : status_order()) statuses[s] = 0;
  std::map<std::string, nlohmann::json> cells;
  for (const CandidateSummary& c : r.candidates) {
    const std::string& status = c.status;
    statuses[status] = statuses.value(status, 0) + 1;
    std::string key = c.module + "/" + c.api;
    auto [it, fresh] = cells.try_emplace(key, nlohmann::json{{"status", status}, {"count", 0}});
    if (status_rank(status) < status_rank(it->second["status"].get<std::string>())) it->second["status"] = status;
    it->second["count"] = it->second["count"].get<int>() + 1;
  }
  row["statuses"] = statuses;
  row["opportunities"] = nlohmann::json(cells);
  return row;
}

std::vector<CandidateSummary> summarise_candidates(const plan::Plan& plan) {
  std::vector<CandidateSummary> out;
  out.reserve(plan.candidates.size());
  for (const plan::Candidate& c : plan.candidates)
    out.push_back({c.module, opportunity_api(c.apis), report::status_word(c.status)});
  return out;
}

namespace {

std::string md_cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

const char* status_short(const std::string& status) {
  if (status == "candidate") return "C";
  if (status == "candidate_with_prerequisites") return "P";
  if (status == "not_applicable") return "NA";
  return "none";
}

}  // namespace

ScanCounts count_rows(const std::vector<nlohmann::json>& rows) {
  ScanCounts n;
  n.models = rows.size();
  for (const auto& row : rows) {
    (row.value("from_cache", false) ? n.cached : n.analysed)++;
    if (row["state"] == "failed") ++n.failed;
  }
  return n;
}

nlohmann::json summary_json(const std::string& root, const std::vector<nlohmann::json>& rows) {
  ScanCounts n = count_rows(rows);
  nlohmann::json models = nlohmann::json::array(), failures = nlohmann::json::array();
  // opportunity key -> status -> number of models whose best status it is
  std::map<std::string, std::map<std::string, int>> by_opportunity;
  for (const auto& row : rows) {
    if (row["state"] == "failed") failures.push_back({{"model", row["name"]}, {"error", row["error"]}});
    else
      for (const auto& [key, cell] : row["opportunities"].items()) by_opportunity[key][cell["status"]]++;
    models.push_back(row);
  }
  nlohmann::json opportunities = nlohmann::json::array();
  for (const auto& [key, counts] : by_opportunity) {
    size_t slash = key.find('/');
    nlohmann::json per_status = nlohmann::json::object();
    for (const auto& s : status_order()) per_status[s] = counts.count(s) ? counts.at(s) : 0;
    opportunities.push_back({{"module", key.substr(0, slash)}, {"api", key.substr(slash + 1)}, {"models", per_status}});
  }
  return {{"format", "npufuse-scan-summary/1"},
          {"root", root},
          {"counts", {{"models", n.models}, {"analysed", n.analysed}, {"cached", n.cached}, {"failed", n.failed}}},
          {"opportunities", opportunities},
          {"models", models},
          {"failures", failures}};
}

namespace {

// The summary's sentences in each report language.
struct SummaryWords {
  const char *title, *counts, *opportunities, *opportunities_note, *opportunity_header, *models, *models_note,
      *model_header, *failed_cell, *failed, *failed_header;
};

const SummaryWords& summary_words(bool zh) {
  static const SummaryWords en{
      "# npufuse scan of {}\n\n",
      "{} model folders: {} analysed, {} read from the cache, {} failed.\n\n",
      "## Fusion opportunities\n\n",
      "Models per opportunity, counted by the best status their candidates reach.\n\n",
      "| module | API | candidate | with prerequisites | not applicable | no fused op |\n|---|---|---:|---:|---:|---:|\n",
      "\n## Models\n\n",
      "Opportunities as module/API (status, candidates): C candidate, P with prerequisites, NA not applicable, "
      "none no fused op.\n\n",
      "| model | C | P | NA | none | opportunities |\n|---|---:|---:|---:|---:|---|\n",
      "failed (see below)",
      "\n## Failed models\n\n",
      "| model | error |\n|---|---|\n"};
  static const SummaryWords zh_words{
      "# npufuse扫描：{}\n\n",
      "共{}个模型目录：本次分析{}个，从缓存读取{}个，失败{}个。\n\n",
      "## 融合机会\n\n",
      "每个融合机会涉及的模型数，按其候选所达到的最佳状态计数。\n\n",
      "| 模块 | 算子 | 候选 | 需前置改造 | 不适用 | 无融合算子 |\n|---|---|---:|---:|---:|---:|\n",
      "\n## 模型\n\n",
      "融合机会写作 模块/算子（状态，候选数）：C 候选，P 需前置改造，NA 不适用，none 无融合算子。\n\n",
      "| 模型 | C | P | NA | none | 融合机会 |\n|---|---:|---:|---:|---:|---|\n",
      "失败（见下文）",
      "\n## 失败的模型\n\n",
      "| 模型 | 错误 |\n|---|---|\n"};
  return zh ? zh_words : en;
}

}  // namespace

std::string summary_markdown(const nlohmann::json& s, const std::string& lang) {
  const SummaryWords& w = summary_words(lang == "zh");
  const auto& n = s["counts"];
  std::string md = fmt::format(fmt::runtime(w.title), s["root"].get<std::string>());
  md += fmt::format(fmt::runtime(w.counts), n["models"].get<size_t>(), n["analysed"].get<size_t>(),
                    n["cached"].get<size_t>(), n["failed"].get<size_t>());

  md += w.opportunities;
  md += w.opportunities_note;
  md += w.opportunity_header;
  for (const auto& o : s["opportunities"]) {
    const auto& m = o["models"];
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", md_cell(o["module"]), md_cell(o["api"]),
                      m["candidate"].get<int>(), m["candidate_with_prerequisites"].get<int>(),
                      m["not_applicable"].get<int>(), m["no_fused_op"].get<int>());
  }

  md += w.models;
  md += w.models_note;
  md += w.model_header;
  for (const auto& m : s["models"]) {
    if (m["state"] == "failed") {
      md += fmt::format("| {} | | | | | {} |\n", md_cell(m["name"]), w.failed_cell);
      continue;
    }
    const auto& st = m["statuses"];
    std::string cells;
    for (const auto& [key, cell] : m["opportunities"].items()) {
      if (!cells.empty()) cells += ", ";
      cells += fmt::format("{} ({}, {})", key, status_short(cell["status"]), cell["count"].get<int>());
    }
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", md_cell(m["name"]), st["candidate"].get<int>(),
                      st["candidate_with_prerequisites"].get<int>(), st["not_applicable"].get<int>(),
                      st["no_fused_op"].get<int>(), md_cell(cells));
  }

  if (!s["failures"].empty()) {
    md += w.failed;
    md += w.failed_header;
    for (const auto& f : s["failures"]) md += fmt::format("| {} | {} |\n", md_cell(f["model"]), md_cell(f["error"]));
  }
  return md;
}

}  // namespace npufuse::scan
