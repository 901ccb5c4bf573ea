#include "plan/model_matches.h"

#include <algorithm>
#include <exception>
#include <set>

#include "model/loss_helpers.h"
#include "util/work_queue.h"

namespace npufuse::plan {
namespace {

bool has_forward(const model::ClassDecl& cls) {
  for (const model::ast::stmt* s : cls.node->body)
    if (auto* fn = model::ast::as<model::ast::FunctionDef>(s); fn && fn->name == "forward") return true;
  return false;
}

// In a graph with its layer loop unrolled, a chain that lies inside one copy
// of the loop body is the layer's own, found (and reported) in the layer's
// forward already. What the unrolled graph adds is a chain across the seams:
// from the first copy into the second (one layer's residual add into the
// next layer's input norm), or from the second into the code after the loop
// (the last layer's add into the final norm). A chain of code around the
// loop alone was found before too.
// `second_copy` is the first op of the loop body's second copy: code after
// the loop comes later.
bool crosses_a_seam(const model::FunctionDataflow& g, const std::vector<int>& ops, int second_copy) {
  bool first = false, second = false, outside = false, after = false;
  for (int id : ops) {
    int copy = g.ops[static_cast<size_t>(id)].unrolled;
    first |= copy == 1;
    second |= copy == 2;
    outside |= copy == 0;
    after |= copy == 0 && id > second_copy;
  }
  if (!first && !second) return outside;
  return (first && second) || (second && after);
}

bool anchored_in_a_copy(const match::NearMissTrace& n, const model::FunctionDataflow& g) {
  return n.anchor_op >= 0 && static_cast<size_t>(n.anchor_op) < g.ops.size() &&
         g.ops[static_cast<size_t>(n.anchor_op)].unrolled != 0;
}

// One graph to match: the function it was built from and that function's class.
struct Target {
  const model::FunctionDataflow* graph;
  std::string function;
  std::string owner;
};

match::MatchResult match_graph(const std::vector<match::Pattern>& patterns, const model::FunctionDataflow& target,
                               match::MatchMemo* memo) {
  match::MatchOptions options;
  options.memo = memo;
  return match::match_patterns(patterns, target, options);
}

// Keeps what one graph gave: of an unrolled graph only what crosses its seams.
void keep(ModelMatches& out, const Target& t, match::MatchResult r) {
  const model::FunctionDataflow& target = *t.graph;
  // An unrolled loop always has a second copy; -1 in every other graph.
  auto second = std::find_if(target.ops.begin(), target.ops.end(), [](const model::DataflowOp& op) { return op.unrolled == 2; });
  const int second_copy = second == target.ops.end() ? -1 : second->id;
  const bool unrolled = second_copy >= 0;
  for (match::Match& m : r.matches)
    if (!unrolled || crosses_a_seam(target, m.ops, second_copy))
      out.matches.push_back(MatchSite{std::move(m), t.function, t.owner});
  for (match::NearMissTrace& n : r.near_misses)
    if (!unrolled || !anchored_in_a_copy(n, target)) out.near_misses.push_back(NearMissSite{std::move(n), t.function});
}

}  // namespace

CompiledPatterns compile_patterns(const rules::RuleSet& rules) {
  return std::make_shared<const std::vector<match::Pattern>>(match::compile_rules(rules.rules()));
}

ModelMatches match_model(const model::SourceSet& sources, const model::RoleTable& roles, const rules::RuleSet& rules,
                         const model::ModelConfig* config, CompiledPatterns patterns, match::MatchMemo* memo,
                         std::map<std::string, model::FunctionDataflow> built, unsigned threads) {
  ModelMatches out;
  out.patterns = patterns ? std::move(patterns) : compile_patterns(rules);
  if (out.patterns->empty()) return out;

  // The graphs are built first, in order (building reads shared model state);
  // matching them is independent work, done on `threads` workers.
  std::vector<Target> targets;
  auto add = [&](model::FunctionDataflow graph, std::string function, std::string owner) {
    out.graphs.push_back(std::move(graph));
    targets.push_back(Target{&out.graphs.back(), std::move(function), std::move(owner)});
  };
  model::RoleTableSubmodules lookup(roles, config);
  for (const model::ClassDecl* cls : roles.module_classes()) {
    if (!has_forward(*cls)) continue;
    std::string name(cls->node->name);
    auto ready = built.find(name);
    // A loop over the decoder layers is unrolled, so that chains across two
    // layers are matched there (model_matches.h).
    add(ready != built.end() ? std::move(ready->second)
                             : model::build_inlined_forward(sources, *cls, lookup, 8, /*unroll_module_loops=*/true),
        name + ".forward", name);
  }
  // Methods other than forward, of any class: a KV cache's `update`/`append`
  // writes the cache there (HF Cache classes are no nn.Module).
  for (const model::ClassDecl& cls : sources.classes())
    for (const model::ast::stmt* s : cls.node->body) {
      auto* fn = model::ast::as<model::ast::FunctionDef>(s);
      if (!fn || fn->name == "forward" || fn->name == "__init__") continue;
      std::string name(cls.node->name);
      add(model::build_dataflow(sources, *cls.file, *fn), name + "." + std::string(fn->name), name);
    }
  // Module-level helpers (apply_rotary_pos_emb, repeat_kv, eager_attention_forward)
  // are matched on their own too: a chain may live entirely in one.
  // Auxiliary-loss helpers are skipped: no inference run reaches them.
  const std::set<std::string>& training_only = sources.training_only();
  for (const auto& file : sources.files()) {
    for (const model::ast::stmt* s : file->parsed->module->body) {
      auto* fn = model::ast::as<model::ast::FunctionDef>(s);
      if (!fn || training_only.count(std::string(fn->name))) continue;
      add(model::build_dataflow(sources, *file, *fn), std::string(fn->name), "");
    }
  }

  std::vector<match::MatchResult> results(targets.size());
  std::vector<std::exception_ptr> failures(targets.size());
  util::run_parallel(targets.size(), threads, [&](size_t i) {
    try {
      results[i] = match_graph(*out.patterns, *targets[i].graph, memo);
    } catch (...) {
      failures[i] = std::current_exception();
    }
  });
  for (size_t i = 0; i < targets.size(); ++i) {
    if (failures[i]) std::rethrow_exception(failures[i]);
    keep(out, targets[i], std::move(results[i]));
  }
  return out;
}

}  // namespace npufuse::plan
