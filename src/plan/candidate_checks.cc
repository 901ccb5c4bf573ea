#include "plan/candidate_checks.h"

#include <fmt/format.h>

#include <algorithm>

namespace npufuse::plan {
namespace {

CheckResult from_constraint(const std::string& api, const catalog::Operator& op, const check::Constraint& c,
                            const check::FactSet& facts) {
  check::ConstraintResult r = check::evaluate_constraint(c, facts);
  CheckResult out;
  out.api = api;
  out.constraint_id = c.id;
  out.answer = r.answer;
  out.severity = check::severity_name(c.severity);
  out.message_en = c.message.en;
  out.message_zh = c.message.zh;
  out.doc = c.doc.empty() ? op.doc.en : c.doc;
  out.evidence = r.evidence;
  out.missing = r.missing;
  return out;
}

// The chip against the operator's product list (the doc's Supported Products
// table, which ticks what it covers and never marks a product unsupported).
// A chip the table leaves out is a hard limit, unless it runs the kernels of a
// product the table lists (facts.toml `same_kernels`): then the operator is
// only undocumented there, a warning to validate on the device.
CheckResult products_check(const catalog::Operator& op, const check::FactSet& facts,
                           const catalog::FactVocabulary& vocabulary) {
  CheckResult out;
  out.api = op.name;
  out.constraint_id = "products";
  out.severity = "error";
  out.doc = op.doc.en;
  std::string list;
  for (const std::string& p : op.products) list += (list.empty() ? "" : ", ") + p;
  out.message_en = fmt::format("{} runs on: {}", op.name, list);
  out.message_zh = fmt::format("{}支持的产品：{}", op.name, list);
  const check::Fact* chip = facts.find("chip");
  if (!chip || !chip->value.is_str()) {
    out.answer = check::Answer::Unknown;
    out.missing = {"chip"};
    return out;
  }
  const std::string& product = chip->value.as_str();
  auto listed = [&](const std::string& p) { return std::find(op.products.begin(), op.products.end(), p) != op.products.end(); };
  out.answer = listed(product) ? check::Answer::Holds : check::Answer::Violated;
  out.evidence = {fmt::format("chip = {} ({})", chip->value.repr(), chip->provenance)};
  if (out.answer == check::Answer::Holds) return out;
  const catalog::FactInfo* info = vocabulary.find("chip");
  if (!info) return out;
  auto kin = info->same_kernels.find(product);
  if (kin == info->same_kernels.end()) return out;
  for (const std::string& p : kin->second) {
    if (!listed(p)) continue;
    out.severity = "warning";
    out.message_en = fmt::format("{}'s doc lists {}, not {}; {} runs {}'s kernels, so the operator is undocumented there, "
                                 "not unsupported: validate it on the device",
                                 op.name, list, product, product, p);
    out.message_zh = fmt::format("{}的文档列出{}，未列出{}；{}与{}使用同一套算子实现，属于文档未覆盖而非不支持，须在设备上验证",
                                 op.name, list, product, product, p);
    out.evidence.push_back(fmt::format("{} runs {}'s kernels (facts.toml [facts.chip] same_kernels)", product, p));
    break;
  }
  return out;
}

CheckResult missing_from_catalog(const std::string& entry, const std::string& what) {
  CheckResult out;
  size_t colon = entry.find(':');
  out.api = entry.substr(0, colon);
  out.constraint_id = colon == std::string::npos ? "" : entry.substr(colon + 1);
  out.answer = check::Answer::Unknown;
  out.severity = "error";
  out.message_en = fmt::format("the catalog has no {} '{}': this check could not be made", what, entry);
  out.message_zh = fmt::format("算子目录中没有{}“{}”，无法检查", what == "operator" ? "算子" : "约束", entry);
  return out;
}

bool same_answer(const CheckResult& a, const CheckResult& b) {
  return a.answer == b.answer && a.missing == b.missing && a.evidence == b.evidence;
}

// The results of one check in every stage: one when they agree.
void merge_stages(std::vector<CheckResult> per_stage, const std::vector<StageFacts>& stages,
                  std::vector<CheckResult>& out) {
  bool alike = std::all_of(per_stage.begin(), per_stage.end(),
                           [&](const CheckResult& r) { return same_answer(r, per_stage.front()); });
  if (alike || per_stage.size() == 1) {
    out.push_back(std::move(per_stage.front()));
    return;
  }
  for (size_t i = 0; i < per_stage.size(); ++i) {
    per_stage[i].stage = stages[i].stage;
    out.push_back(std::move(per_stage[i]));
  }
}

}  // namespace

std::vector<CheckResult> evaluate_checks(const rules::Rule& rule, const catalog::Catalog& catalog,
                                         const std::vector<StageFacts>& stages) {
  std::vector<CheckResult> out;
  if (stages.empty()) return out;
  std::vector<std::string> products_done;
  for (const std::string& entry : rule.checks) {
    size_t colon = entry.find(':');
    std::string api = entry.substr(0, colon);
    std::string id = colon == std::string::npos ? "*" : entry.substr(colon + 1);
    const catalog::Operator* op = catalog.find(api);
    if (!op) {
      out.push_back(missing_from_catalog(entry, "operator"));
      continue;
    }
    if (std::find(products_done.begin(), products_done.end(), api) == products_done.end()) {
      products_done.push_back(api);
      std::vector<CheckResult> per_stage;
      for (const StageFacts& s : stages) per_stage.push_back(products_check(*op, s.facts, catalog.facts()));
      merge_stages(std::move(per_stage), stages, out);
    }
    bool found = false;
    for (const check::Constraint& c : op->constraints) {
      if (id != "*" && c.id != id) continue;
      found = true;
      std::vector<CheckResult> per_stage;
      for (const StageFacts& s : stages) per_stage.push_back(from_constraint(api, *op, c, s.facts));
      merge_stages(std::move(per_stage), stages, out);
    }
    if (!found && id != "*") out.push_back(missing_from_catalog(entry, "constraint"));
  }
  return out;
}

std::string blocking_text(const CheckResult& r) {
  std::string where = r.stage.empty() ? "" : " (" + r.stage + ")";
  std::string doc = r.doc.empty() ? "" : " [" + r.doc + "]";
  std::string message = r.message_en.empty() ? "constraint violated" : r.message_en;
  std::string facts;
  for (const std::string& e : r.evidence) facts += (facts.empty() ? "; facts: " : ", ") + e;
  return fmt::format("{}:{}{}: {}{}{}", r.api, r.constraint_id, where, message, doc, facts);
}

}  // namespace npufuse::plan
