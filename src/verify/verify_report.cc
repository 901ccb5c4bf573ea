#include "verify/verify_report.h"

#include <fmt/format.h>

#include "verify/candidate_check.h"
#include "verify/tolerance_table.h"

namespace npufuse::verify {
namespace {

using json = nlohmann::ordered_json;

json check_json(const CheckResult& r) {
  json j = r.data.is_object() ? r.data : json::object();
  j["passed"] = r.passed;
  j["error"] = r.error.empty() ? json(nullptr) : json(r.error);
  j.erase("traceback");
  j.erase("lines_run");  // what it says per candidate is in candidates[].exercised
  return j;
}

// The performance line of one candidate: measured on an NPU, else the estimate.
std::string performance_words(const CheckResult& r, const HarnessSpec& spec) {
  const json& perf = r.data.is_object() && r.data.contains("performance") ? r.data["performance"] : spec.estimate;
  if (!perf.is_object()) return "none (no harness ran)";
  if (perf.value("kind", "") == "measured") {
    // Median and spread of each side, and how many timed calls they are of.
    auto side = [](const json& t) {
      return fmt::format("{:.1f} us (min {:.1f}, max {:.1f})", t.value("median_us", 0.0), t.value("min_us", 0.0),
                         t.value("max_us", 0.0));
    };
    const json& before = perf["original"];
    return fmt::format("measured: original {}, fused {}; medians of {} calls after {} warm-up, {:.2f}x",
                       side(before), side(perf["replacement"]), before.value("repeats", 0), before.value("warmup", 0),
                       perf.value("speedup", 0.0));
  }
  if (perf.contains("unavailable")) return "estimate unavailable: " + perf["unavailable"].get<std::string>();
  std::vector<std::string> parts;
  if (perf.contains("stages"))
    for (const auto& s : perf["stages"])
      parts.push_back(fmt::format("{} {:.3g} -> {:.3g} us/token ({:.0f}% less)", s.value("stage", ""),
                                  s.value("unfused_us_per_token", 0.0), s.value("fused_us_per_token", 0.0),
                                  s.value("saving_percent", 0.0)));
  return "estimate: " + fmt::format("{}", fmt::join(parts, "; "));
}

std::string cell(std::string s) {
  for (char& ch : s)
    if (ch == '|' || ch == '\n') ch = ch == '|' ? '/' : ' ';
  return s;
}

}  // namespace

bool VerifyReport::all_passed() const {
  for (const CandidateVerdict& c : candidates)
    if (c.status == "failed" || c.status == "rolled_back" || c.status == "not_exercised") return false;
  if (model_check && !model_check->passed && model_check->text("skipped").empty()) return false;
  return true;
}

json report_json(const VerifyReport& report) {
  json j;
  j["schema"] = "npufuse-verify/1";
  j["mode"] = report.settings.mode;
  j["plan"] = report.settings.plan;
  j["device"] = report.settings.device;
  j["batch"] = report.settings.batch;
  j["seq"] = report.settings.seq;
  j["dtype"] = report.settings.dtype;
  j["tolerances"] = json::array();
  for (const Tolerance& t : tolerance_table())
    j["tolerances"].push_back({{"dtype", t.dtype}, {"atol", t.atol}, {"rtol", t.rtol}, {"cosine", t.cosine}});
  j["candidates"] = json::array();
  for (const CandidateVerdict& c : report.candidates) {
    json cj;
    cj["id"] = c.id;
    cj["rule"] = c.rule;
    cj["apis"] = c.apis;
    cj["plan_status"] = c.plan_status;
    cj["status"] = c.status;
    cj["conclusion"] = c.conclusion;
    cj["applied"] = c.applied;
    cj["manual"] = c.manual;
    cj["refactors"] = c.refactors;
    cj["checked"] = c.checked;
    cj["assumed"] = c.assumed;
    cj["harness"] = c.harness;
    cj["sizes"] = c.spec.sizes;
    cj["sizes_note"] = c.spec.sizes_note;
    cj["precision"] = check_json(c.precision);
    cj["performance"] = c.precision.data.is_object() && c.precision.data.contains("performance")
                            ? c.precision.data["performance"]
                            : c.spec.estimate;
    cj["precision"].erase("performance");
    cj["model_check"] = c.model_check ? check_json(*c.model_check) : json(nullptr);
    json changed = json::array(), not_run = json::array();
    for (const ChangedSpan& s : c.changed) changed.push_back({{"file", s.copy}, {"first", s.first}, {"last", s.last}});
    for (const ChangedSpan& s : c.not_run) not_run.push_back({{"file", s.copy}, {"first", s.first}, {"last", s.last}});
    cj["exercised"] = {{"by", c.exercised_by.empty() ? json(nullptr) : json(c.exercised_by)},
                       {"changed_lines", changed}, {"not_run", not_run}};
    cj["diff"] = c.diff;
    cj["alternatives"] = json::array();
    for (const AlternativeNote& a : c.alternatives)
      cj["alternatives"].push_back({{"id", a.id}, {"plan_status", a.plan_status}, {"outcome", a.outcome}});
    j["candidates"].push_back(cj);
  }
  j["model_check"] = report.model_check ? check_json(*report.model_check) : json(nullptr);
  j["all_passed"] = report.all_passed();
  j["written"] = report.written;
  j["notes"] = report.notes;
  return j;
}

std::string report_markdown(const VerifyReport& report) {
  const RunSettings& s = report.settings;
  std::string md = fmt::format("# npufuse {} report\n\n", s.mode == "verify" ? "verification" : "optimisation");
  md += fmt::format("Plan `{}`; device `{}`; inputs batch {} x sequence {}, dtype {}.\n", s.plan, s.device, s.batch,
                    s.seq, s.dtype);
  md += "Tolerances (element: |fused - original| <= atol + rtol * |original|; tensor: cosine at least):";
  for (const Tolerance& t : tolerance_table())
    md += fmt::format(" {} atol {:g} rtol {:g} cosine {:g};", t.dtype, t.atol, t.rtol, t.cosine);
  md += "\nPerformance without an NPU is an **estimate** from verify/cost_model.toml (docs/verify.md).\n\n";
  md += "| candidate | status | precision | performance |\n|---|---|---|---|\n";
  for (const CandidateVerdict& c : report.candidates)
    md += fmt::format("| `{}` | {} | {} | {} |\n", c.id, c.status, cell(precision_words(c.precision)),
                      cell(performance_words(c.precision, c.spec)));
  if (report.model_check) md += fmt::format("\nWhole model: {}\n", model_check_words(*report.model_check));
  for (const CandidateVerdict& c : report.candidates) {
    md += fmt::format("\n## `{}`\n\n", c.id);
    md += fmt::format("- rule `{}` ({}), plan status {}\n", c.rule, fmt::join(c.apis, ", "), c.plan_status);
    md += fmt::format("- status: **{}**: {}\n", c.status, c.conclusion);
    md += fmt::format("- cut: {}\n", c.precision.text("cut").empty() ? "none" : c.precision.text("cut"));
    std::string note = c.precision.text("cut_note").empty() ? c.spec.cut_note : c.precision.text("cut_note");
    if (!note.empty()) md += fmt::format("- cut note: {}\n", note);
    if (!c.spec.sizes_note.empty()) md += fmt::format("- sizes: {}\n", c.spec.sizes_note);
    if (!c.precision.text("dtype_note").empty()) md += fmt::format("- dtype: {}\n", c.precision.text("dtype_note"));
    md += fmt::format("- performance: {}\n", performance_words(c.precision, c.spec));
    if (c.model_check) md += fmt::format("- {}\n", model_check_words(*c.model_check));
    if (!c.changed.empty())
      md += fmt::format("- changed lines {}: {}\n", spans_words(c.changed),
                        c.not_run.empty() && !c.exercised_by.empty() ? "ran in the " + c.exercised_by
                                                                     : "not run by a passing check: " + spans_words(c.not_run));
    for (const std::string& r : c.refactors) md += fmt::format("- refactor: {}\n", r);
    for (const std::string& r : c.checked) md += fmt::format("- checked: {}\n", r);
    for (const std::string& r : c.assumed) md += fmt::format("- assumed: {}\n", r);
    for (const std::string& m : c.manual) md += fmt::format("- manual: {}\n", m);
    for (const AlternativeNote& a : c.alternatives)
      md += fmt::format("- alternative `{}` ({}): {}\n", a.id, a.plan_status, a.outcome);
    md += fmt::format("- harness: `{}`\n", c.harness);
    if (!c.diff.empty()) md += fmt::format("\n```diff\n{}```\n", c.diff);
  }
  for (const std::string& n : report.notes) md += fmt::format("\nNote: {}\n", n);
  return md;
}

}  // namespace npufuse::verify
