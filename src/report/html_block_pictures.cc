#include "report/html_block_pictures.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "model/config_schema.h"
#include "model/evaluator.h"
#include "model/module_roles.h"

namespace npufuse::report {
namespace {

bool drawn_role(model::ModuleRole r) {
  return r == model::ModuleRole::DecoderLayer || r == model::ModuleRole::Attention || r == model::ModuleRole::MoE ||
         r == model::ModuleRole::Indexer;
}

bool has_forward(const model::ClassDecl& cls) {
  for (const model::ast::stmt* s : cls.node->body)
    if (auto* fn = model::ast::as<model::ast::FunctionDef>(s); fn && fn->name == "forward") return true;
  return false;
}

bool computes(model::OpClass c) {
  return c == model::OpClass::Compute || c == model::OpClass::Cast || c == model::OpClass::View ||
         c == model::OpClass::Slice || c == model::OpClass::Module;
}

}  // namespace

OpOwner candidate_owner(const plan::Plan& plan) {
  using Key = std::tuple<std::string, uint32_t, uint32_t>;
  auto exact = std::make_shared<std::map<Key, int>>();
  struct LineOwner {
    plan::Location where;
    int candidate;
  };
  auto by_lines = std::make_shared<std::vector<LineOwner>>();
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const plan::Candidate& c = plan.candidates[i];
    // The first candidate in plan order keeps an op both chains hold.
    for (const auto& r : c.apply_ops) exact->emplace(Key{r.file, r.begin, r.end}, static_cast<int>(i));
    for (const plan::Candidate& a : c.alternatives)
      for (const auto& r : a.apply_ops) exact->emplace(Key{r.file, r.begin, r.end}, static_cast<int>(i));
    if (c.apply_ops.empty() && c.status == plan::Status::NoFusedOp) {
      by_lines->push_back({c.location, static_cast<int>(i)});
      for (const auto& l : c.extra_locations) by_lines->push_back({l, static_cast<int>(i)});
    }
  }
  return [exact, by_lines](const model::DataflowOp& op) {
    if (!op.file) return -1;
    if (auto it = exact->find(Key{op.file->path, op.begin, op.end}); it != exact->end()) return it->second;
    if (!computes(op.cls)) return -1;
    for (const LineOwner& o : *by_lines)
      if (o.where.file == op.file->path && op.line >= o.where.start_line &&
          op.line <= std::max(o.where.start_line, o.where.end_line))
        return o.candidate;
    return -1;
  };
}

std::vector<BlockPicture> block_pictures(const model::SourceSet& sources, const model::ModelConfig& config,
                                         const plan::Plan& plan) {
  model::ConfigSchema schema = model::ConfigSchema::discover(sources);
  model::Evaluator ev(sources, config, schema);
  model::RoleTable roles = model::RoleTable::infer(sources, ev);
  model::RoleTableSubmodules lookup(roles, &config);
  OpOwner owner = candidate_owner(plan);

  std::vector<BlockPicture> out;
  for (const model::ClassDecl* cls : roles.module_classes()) {
    const model::ClassRole* role = roles.find(cls->node->name);
    if (!role || !drawn_role(role->role) || !has_forward(*cls)) continue;
    BlockPicture p;
    p.class_name = std::string(cls->node->name);
    p.role = model::role_name(role->role);
    p.file = cls->file->path;
    p.line = cls->file->span_of(cls->node).line;
    p.graph = dataflow_picture(model::build_inlined_forward(sources, *cls, lookup), owner);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace npufuse::report
