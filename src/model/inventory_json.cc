#include "model/inventory_json.h"

namespace npufuse::model {

namespace {

using json = nlohmann::json;

json size_json(const SizeValue& s) {
  json j;
  j["expr"] = s.written;
  j["symbolic"] = s.value.text;
  j["known"] = s.value.is_known();
  j["value"] = s.value.is_known() ? s.value.value : json(nullptr);
  return j;
}

json sym_json(const SymValue& v) {
  if (v.text.empty() && !v.is_known()) return nullptr;
  json j;
  j["symbolic"] = v.text;
  j["known"] = v.is_known();
  j["value"] = v.is_known() ? v.value : json(nullptr);
  return j;
}

json sizes_json(const std::vector<SizeValue>& sizes) {
  json j = json::object();
  for (const SizeValue& s : sizes) j[s.label] = size_json(s);
  return j;
}

json optional_bool(const std::optional<bool>& b) { return b ? json(*b) : json(nullptr); }

json node_json(const ModuleNode& n) {
  json j;
  j["path"] = n.path;
  j["attribute"] = n.attribute;
  j["class"] = n.class_name;
  j["local"] = n.local;
  j["role"] = role_name(n.role);
  j["position"] = n.position;
  j["kind"] = attribute_kind_name(n.kind);
  j["file"] = n.where.file;
  j["line"] = n.where.line;
  if (n.local) j["class_line"] = n.class_where.line;
  j["condition"] = n.condition;
  j["active"] = optional_bool(n.active);
  j["count"] = n.kind == AttributeKind::Submodule ? json(nullptr) : sym_json(n.count);
  j["element_condition"] = n.element_condition;
  j["sizes"] = sizes_json(n.sizes);
  j["note"] = n.note;
  j["children"] = json::array();
  for (const ModuleNode& c : n.children) j["children"].push_back(node_json(c));
  return j;
}

json attribute_json(const Attribute& a) {
  json j;
  j["name"] = a.name;
  j["kind"] = attribute_kind_name(a.kind);
  j["file"] = a.where.file;
  j["line"] = a.where.line;
  j["condition"] = a.condition;
  j["active"] = optional_bool(a.active);
  j["constructor"] = a.module.written;
  j["container"] = a.container;
  j["class"] = a.module.local ? std::string(a.module.local->node->name) : a.module.qualified;
  j["count"] = (a.kind == AttributeKind::ModuleList || a.kind == AttributeKind::ModuleDict) ? sym_json(a.count) : json(nullptr);
  j["element_condition"] = a.element_condition;
  j["sizes"] = sizes_json(a.sizes);
  json args = json::object();
  for (const auto& [k, v] : a.module.bindings) {
    if (v.is_config()) continue;
    args[k] = sym_json(v);
  }
  j["arguments"] = args;
  j["note"] = a.note;
  j["inherited"] = a.inherited;
  return j;
}

json part_path(const PipelinePart& p) { return p.node ? json(p.node->path) : json(nullptr); }

json span_json(const SourceSpan& s) { return {{"file", s.file}, {"line", s.line}, {"end_line", s.end_line}}; }

json chains_json(const std::vector<BlockChains>& blocks) {
  json out = json::array();
  for (const BlockChains& b : blocks) {
    json bj;
    bj["block_class"] = b.block_class;
    bj["instance"] = b.instance;
    bj["modules"] = json::array();
    for (const ModuleChain& m : b.modules) {
      json mj;
      mj["module"] = m.module;
      mj["class"] = m.class_name;
      mj["instance"] = m.instance;
      mj["alternative"] = m.alternative;
      mj["default_graph"] = m.default_graph;
      mj["steps"] = json::array();
      for (const SubChainStep& s : m.steps) {
        json spans = json::array();
        for (const SourceSpan& sp : s.spans) spans.push_back(span_json(sp));
        mj["steps"].push_back({{"kind", s.kind}, {"spans", spans}, {"ops", s.ops}, {"stages", s.stages},
                               {"variant", s.variant}, {"detail", s.detail}});
      }
      mj["missing"] = m.missing;
      mj["escapes"] = json::array();
      for (const IntermediateEscape& e : m.escapes)
        mj["escapes"].push_back({{"step", e.step}, {"value", e.value}, {"how", e.how}, {"file", e.where.file}, {"line", e.where.line}});
      if (m.module == "attention" || m.module == "mla") mj["layout"] = {{"layout", m.layout.layout}, {"evidence", m.layout.evidence}};
      else mj["layout"] = nullptr;
      bj["modules"].push_back(mj);
    }
    out.push_back(bj);
  }
  return out;
}

}  // namespace

json inventory_to_json(const Inventory& inv) {
  json j;
  j["schema"] = kInspectSchema;
  j["files"] = inv.files;
  j["config"] = inv.config_path.empty() ? json(nullptr) : json(inv.config_path);

  json structure;
  structure["root"] = inv.structure.root ? node_json(*inv.structure.root) : json(nullptr);
  structure["other_roots"] = inv.structure.other_roots;
  json pipeline;
  pipeline["embedding"] = part_path(inv.structure.embedding);
  pipeline["blocks"] = part_path(inv.structure.blocks);
  pipeline["block_class"] = inv.structure.blocks.node ? json(inv.structure.blocks.node->class_name) : json(nullptr);
  pipeline["block_count"] = inv.structure.blocks.node ? sym_json(inv.structure.blocks.node->count) : json(nullptr);
  pipeline["final_norm"] = part_path(inv.structure.final_norm);
  pipeline["lm_head"] = part_path(inv.structure.lm_head);
  structure["pipeline"] = pipeline;
  structure["notes"] = inv.structure.notes;
  j["structure"] = structure;

  j["classes"] = json::array();
  for (const ClassSummary& c : inv.classes) {
    json cj;
    cj["name"] = std::string(c.cls->node->name);
    cj["file"] = c.where.file;
    cj["line"] = c.where.line;
    cj["end_line"] = c.where.end_line;
    cj["bases"] = c.bases;
    cj["role"] = role_name(c.role.role);
    cj["role_evidence"] = c.role.evidence;
    cj["weight_offset_one"] = c.role.weight_offset_one;
    cj["forward_ops"] = c.forward_ops;
    cj["forward_calls"] = c.forward_calls;
    cj["attributes"] = json::array();
    for (const Attribute& a : c.attributes) cj["attributes"].push_back(attribute_json(a));
    j["classes"].push_back(cj);
  }

  j["facts"] = json::array();
  for (const Fact& f : inv.facts) {
    j["facts"].push_back({{"name", f.name}, {"known", f.known}, {"value", f.known ? f.value : json(nullptr)}, {"source", f.source}});
  }
  j["config_fields"] = json::array();
  for (const ConfigFieldUse& u : inv.config_fields) {
    json used = json::array();
    for (const SourceSpan& w : u.where) used.push_back(w.str());
    j["config_fields"].push_back({{"key", u.key}, {"found", u.found}, {"used_at", used}});
  }
  j["branches"] = json::array();
  for (const BranchCondition& b : inv.branches) {
    json kinds = json::array();
    for (BranchKind k : b.kinds) kinds.push_back(branch_kind_name(k));
    j["branches"].push_back({{"function", b.function},
                             {"owner", b.owner},
                             {"file", b.where.file},
                             {"line", b.where.line},
                             {"form", b.form},
                             {"condition", b.condition},
                             {"kinds", kinds},
                             {"true_stage", b.true_stage},
                             {"then_calls", b.then_calls},
                             {"else_calls", b.else_calls},
                             {"communication", b.communication},
                             {"config_arm", b.config_arm},
                             {"config_value", b.config_value}});
  }
  json cache;
  cache["organisation"] = inv.kv_cache.organisation;
  cache["write_index"] = inv.kv_cache.write_index;
  cache["accesses"] = json::array();
  for (const CacheAccess& a : inv.kv_cache.accesses)
    cache["accesses"].push_back({{"function", a.function},
                                 {"file", a.where.file},
                                 {"line", a.where.line},
                                 {"mechanism", a.mechanism},
                                 {"text", a.text},
                                 {"write_index", a.write_index}});
  j["kv_cache"] = cache;
  j["chains"] = chains_json(inv.chains);
  j["not_computed"] = json::array();
  for (const auto& [part, meaning] : pending_inventory_parts()) j["not_computed"].push_back({{"part", part}, {"meaning", meaning}});
  return j;
}

}  // namespace npufuse::model
