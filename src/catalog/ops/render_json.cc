#include "catalog/docstrings.h"
#include "catalog/ops/docstring_agreement.h"
#include "catalog/ops/render.h"

namespace npufuse::catalog {
namespace {

using Json = nlohmann::ordered_json;

Json text_json(const LocalizedText& t) { return Json{{"en", t.en}, {"zh", t.zh}}; }

Json sources_json(const OpsEntry& e, const OpsProvenance& from) {
  Json s = Json::array();
  if (e.op) s.push_back(Json{{"kind", "catalog"}, {"from", from.catalog}, {"path", e.op->path}});
  if (e.docstring)
    s.push_back(Json{{"kind", "docstring"}, {"from", from.docstrings}, {"line", e.docstring->line}});
  return s;
}

}  // namespace

Json show_json(const OpsEntry& e, const OpsProvenance& from, Lang lang) {
  Json j;
  j["name"] = e.name;
  j["sources"] = sources_json(e, from);
  if (e.docstring) {
    j["docstring"] = Json{{"prototype", docstring_prototype(e.docstring->text, e.name)}, {"text", e.docstring->text}};
  }
  if (!e.op) return j;
  const Operator& op = *e.op;
  j["family"] = op.family;
  j["status"] = op.status;
  j["summary"] = text_json(op.summary);
  j["description"] = text_json(op.description);
  j["signature"] = render_signature(op);
  Json params = Json::array();
  for (const auto& p : op.params) {
    Json pj{{"name", p.name}, {"type", p.type}, {"kw_only", p.kw_only}};
    pj["default"] = p.default_value ? Json(*p.default_value) : Json(nullptr);
    pj["doc"] = text_json(p.doc);
    params.push_back(std::move(pj));
  }
  j["params"] = std::move(params);
  Json outputs = Json::array();
  for (const auto& o : op.outputs) outputs.push_back(Json{{"name", o.name}, {"type", o.type}, {"doc", text_json(o.doc)}});
  j["outputs"] = std::move(outputs);
  j["products"] = op.products;
  j["dtypes"] = op.dtypes;
  j["layouts"] = op.layouts;
  Json constraints = Json::array();
  for (const auto& c : op.constraints) {
    Json cj{{"id", c.id}};
    cj["when"] = c.when_text.empty() ? Json(nullptr) : Json(c.when_text);
    cj["require"] = c.require_text;
    cj["severity"] = check::severity_name(c.severity);
    cj["message"] = text_json(c.message);
    cj["doc"] = c.doc;
    constraints.push_back(std::move(cj));
  }
  j["constraints"] = std::move(constraints);
  j["versions"] = Json{{"torch_npu", op.versions_torch_npu}, {"cann", op.versions_cann}};
  Json pitfalls = Json::array();
  for (const auto& p : op.pitfalls) pitfalls.push_back(Json{{"text", text_json(p.text)}, {"source", p.source}});
  j["pitfalls"] = std::move(pitfalls);
  j["related"] = op.related;
  Json drift = Json::array();
  for (const auto& d : op.schema_drift)
    drift.push_back(Json{{"param", d.param}, {"kind", drift_kind_name(d.kind)}, {"note", d.note}});
  j["schema_drift"] = std::move(drift);
  j["doc"] = text_json(op.doc);
  j["warnings"] = e.docstring ? Json(docstring_disagreements(op, *e.docstring, lang)) : Json::array();
  return j;
}

Json search_json(const std::string& keyword, const std::vector<SearchHit>& hits, size_t max, Lang lang) {
  Json results = Json::array();
  for (size_t i = 0; i < hits.size() && i < max; ++i) {
    const OpsEntry& e = *hits[i].entry;
    Json hit{{"name", e.name},
             {"match", match_tier_name(hits[i].tier)},
             {"in_catalog", e.op != nullptr},
             {"in_docstrings", e.docstring != nullptr},
             {"summary", e.op ? e.op->summary.in(lang)
                              : (e.docstring ? first_line(e.docstring->text, 150) : e.alias->note.in(lang))}};
    if (e.alias_only()) hit["alias"] = Json{{"kind", e.alias->kind}, {"use", e.alias->use}};
    results.push_back(std::move(hit));
  }
  return Json{{"query", keyword}, {"total", hits.size()}, {"results", std::move(results)}};
}

Json list_json(const std::vector<const OpsEntry*>& entries, const OpsProvenance& from) {
  Json ops = Json::array();
  for (const OpsEntry* e : entries)
    ops.push_back(Json{{"name", e->name}, {"in_catalog", e->op != nullptr}, {"in_docstrings", e->docstring != nullptr}});
  return Json{{"catalog", from.catalog},
              {"docstrings", from.docstrings.empty() ? Json(nullptr) : Json(from.docstrings)},
              {"count", entries.size()},
              {"operators", std::move(ops)}};
}

}  // namespace npufuse::catalog
