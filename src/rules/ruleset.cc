// Loading every rule file: parse it with the frontend, read RULE, the two
// documentation texts and the functions, then check what ties the file to its
// neighbours (near-miss fixtures). Errors of all files are reported together.
#include "rules/ruleset.h"

#include <algorithm>
#include <set>

#include "frontend/diagnostic.h"
#include "rules/load_errors.h"
#include "rules/rule_docs.h"
#include "rules/rule_functions.h"
#include "rules/rule_metadata.h"
#include "util/work_queue.h"

namespace npufuse::rules {

namespace ast = frontend::ast;

namespace {

// "<family>/<name>.py" -> {family, stem}; anything else (fixtures/, files
// at the root, private `_x.py` helpers) is not a rule.
bool rule_path(const std::string& path, std::string& family, std::string& stem) {
  size_t slash = path.find('/');
  if (slash == std::string::npos || path.find('/', slash + 1) != std::string::npos) return false;
  std::string name = path.substr(slash + 1);
  if (name.size() <= 3 || name.compare(name.size() - 3, 3, ".py") != 0 || name[0] == '_') return false;
  family = path.substr(0, slash);
  stem = name.substr(0, name.size() - 3);
  return !family.empty() && family[0] != '.' && family[0] != '_';
}

const ast::Constant* module_docstring(const model::ModelFile& file) {
  const auto& body = file.parsed->module->body;
  if (body.empty()) return nullptr;
  const auto* e = ast::as<ast::Expr>(body[0]);
  const auto* c = e ? ast::as<ast::Constant>(e->value) : nullptr;
  return c && c->value.kind == ast::ConstantKind::Str ? c : nullptr;
}

const ast::Assign* rule_assignment(const model::ModelFile& file) {
  for (const ast::stmt* s : file.parsed->module->body) {
    const auto* a = ast::as<ast::Assign>(s);
    if (!a || a->targets.size != 1) continue;
    const auto* target = ast::as<ast::Name>(a->targets[0]);
    if (target && target->id == "RULE") return a;
  }
  return nullptr;
}

// The value node of `key` in the RULE dict, or the dict itself.
const ast::expr* rule_value(const ast::Dict* d, std::string_view key) {
  for (size_t i = 0; i < d->keys.size; ++i) {
    const auto* k = ast::as<ast::Constant>(d->keys[i]);
    if (k && k->value.kind == ast::ConstantKind::Str && ast::constant_string(k->value) == key) return d->values[i];
  }
  return nullptr;
}

void read_docs(const model::ModelFile& file, const ast::Dict* literal, Rule& rule, LoadErrors& errors) {
  if (const ast::Constant* doc = module_docstring(file)) {
    RuleDoc en = read_rule_doc(file, doc, doc_headings_en(), "the module docstring", errors);
    rule.summary_en = std::move(en.summary);
    rule.doc_en = std::move(en.sections);
  } else {
    errors.at_line(file.path, 1, 1, "no module docstring: it is the rule's English documentation");
  }
  const auto* zh = ast::as<ast::Constant>(literal ? rule_value(literal, "doc_zh") : nullptr);
  if (zh && zh->value.kind == ast::ConstantKind::Str) {
    RuleDoc doc = read_rule_doc(file, zh, doc_headings_zh(), "RULE['doc_zh']", errors);
    rule.summary_zh = std::move(doc.summary);
    rule.doc_zh = std::move(doc.sections);
  }
}

// RULE["near_misses"] lists exactly the `<stem>_nomatch_*` fixtures of the rule.
void check_near_misses(const model::ModelFile& file, const ast::Dict* literal, const Rule& rule, const std::string& stem,
                       const std::set<std::string>& all_paths, LoadErrors& errors) {
  const ast::expr* at = rule_value(literal, "near_misses");
  if (!at) at = literal;
  std::set<std::string> listed;
  for (const auto& nm : rule.near_misses) {
    listed.insert(nm.file);
    if (!all_paths.count(rule.family + "/" + nm.file))
      errors.at(file, at, "near miss '" + nm.file + "' does not exist in " + rule.family + "/");
  }
  std::string prefix = rule.family + "/fixtures/" + stem + "_nomatch_";
  for (auto it = all_paths.lower_bound(prefix); it != all_paths.end() && it->compare(0, prefix.size(), prefix) == 0; ++it) {
    std::string relative = it->substr(rule.family.size() + 1);
    if (!listed.count(relative))
      errors.at(file, at, "fixture '" + relative + "' is a near miss of this rule but RULE['near_misses'] omits it");
  }
}

// min_torch names the alternatives that need a newer torch; a typo would mean nothing is skipped.
void check_min_torch(const model::ModelFile& file, const ast::Dict* literal, const Rule& rule, LoadErrors& errors) {
  auto it = rule.literal.find("min_torch");
  if (it == rule.literal.end() || !it->is_object()) return;
  std::set<std::string, std::less<>> names;
  for (const auto* fn : rule.searches) names.insert(std::string(fn->name));
  for (const auto* fn : rule.naives) names.insert(std::string(fn->name));
  for (const auto& [name, _] : it->items())
    if (!names.count(name))
      errors.at(file, rule_value(literal, "min_torch"), "RULE['min_torch'] names '" + name + "', which is not a search/naive function of this file");
}

// absorbed_returns names the input holding the key up-projection; a typo would
// only show when the numeric check runs.
void check_absorbed_returns(const model::ModelFile& file, const ast::Dict* literal, const Rule& rule, LoadErrors& errors) {
  auto it = rule.literal.find("absorbed_returns");
  if (it == rule.literal.end() || !it->is_object()) return;
  auto inputs = rule.literal.find("inputs");
  for (const auto& [position, spec] : it->items()) {
    if (!spec.is_object() || !spec.contains("weight") || !spec["weight"].is_string()) continue;
    std::string weight = spec["weight"].get<std::string>();
    if (inputs == rule.literal.end() || !inputs->is_object() || !inputs->contains(weight))
      errors.at(file, rule_value(literal, "absorbed_returns"),
                "RULE['absorbed_returns'] '" + position + "' names weight '" + weight + "', which is not in RULE['inputs']");
  }
}

// RULE["apply"] names locals and parameters of `replace`; a typo would
// silently build nothing once.
void check_apply(const model::ModelFile& file, const ast::Dict* literal, const Rule& rule, LoadErrors& errors) {
  if (!rule.replace || (rule.built_once.empty() && rule.init_bindings.empty())) return;
  std::set<std::string, std::less<>> params, locals;
  for (const ast::arg* a : rule.replace->args->args) params.insert(std::string(a->arg));
  for (const ast::arg* a : rule.replace->args->kwonlyargs) params.insert(std::string(a->arg));
  for (const ast::stmt* s : rule.replace->body)
    if (auto* assign = ast::as<ast::Assign>(s))
      for (const ast::expr* t : assign->targets)
        if (auto* name = ast::as<ast::Name>(t)) locals.insert(std::string(name->id));
  const ast::expr* at = rule_value(literal, "apply");
  for (const std::string& local : rule.built_once)
    if (!locals.count(local))
      errors.at(file, at, "RULE['apply']['built_once'] names '" + local + "', which no statement of replace assigns");
  for (const auto& [param, _] : rule.init_bindings)
    if (!params.count(param))
      errors.at(file, at, "RULE['apply']['init_bindings'] names '" + param + "', which is not a parameter of replace");
}

}  // namespace

RuleSet RuleSet::load(const std::vector<RuleFile>& files, const std::string& display_root) {
  RuleSet set;
  LoadErrors errors;
  std::set<std::string> all_paths;
  for (const auto& f : files) all_paths.insert(f.path);

  // Each file is read on its own (on one worker per core); the rules, and
  // the errors, keep the files' order.
  struct Read {
    bool is_rule = false;
    std::shared_ptr<model::SourceSet> sources;
    Rule rule;
    LoadErrors errors;
  };
  std::vector<Read> read(files.size());
  util::run_parallel(files.size(), 0, [&](size_t i) {
    const RuleFile& f = files[i];
    Read& out = read[i];
    std::string family, stem;
    if (!rule_path(f.path, family, stem)) return;
    out.is_rule = true;
    std::string shown = display_root.empty() ? f.path : display_root + "/" + f.path;
    try {
      out.sources = std::make_shared<model::SourceSet>(model::SourceSet::from_texts({{shown, f.text}}));
    } catch (const frontend::SyntaxError& e) {
      out.errors.raw(e.what());
      out.is_rule = false;
      return;
    } catch (const std::exception& e) {
      out.errors.raw(shown + ": " + e.what());
      out.is_rule = false;
      return;
    }
    const model::ModelFile& file = *out.sources->files().front();
    Rule& rule = out.rule;
    LoadErrors& errors = out.errors;
    rule.family = family;
    rule.path = shown;
    rule.sources = out.sources.get();
    rule.file = &file;

    const ast::Assign* assign = rule_assignment(file);
    const ast::Dict* literal = assign ? ast::as<ast::Dict>(assign->value) : nullptr;
    if (!assign) errors.at_line(shown, 1, 1, "no module-level `RULE = {...}` assignment");
    else if (!literal) errors.at(file, assign->value, "RULE must be a dict literal");
    try {
      if (literal) read_rule_metadata(file, literal, stem, rule, errors);
      read_docs(file, literal, rule, errors);
      read_rule_functions(file, rule, errors);
      if (literal) {
        check_near_misses(file, literal, rule, stem, all_paths, errors);
        check_min_torch(file, literal, rule, errors);
        check_absorbed_returns(file, literal, rule, errors);
        check_apply(file, literal, rule, errors);
      }
    } catch (const std::exception& e) {
      errors.raw(shown + ": " + e.what());
    }
  });
  for (Read& r : read) {
    errors.take(std::move(r.errors));
    if (!r.is_rule) continue;
    set.sources_.push_back(std::move(r.sources));
    set.rules_.push_back(std::move(r.rule));
  }
  std::set<std::string> ids;
  for (const Rule& r : set.rules_) ids.insert(r.id);
  for (const Rule& r : set.rules_)
    for (const Reject& reject : r.rejects)
      for (const std::string& spared : reject.spares)
        if (!ids.count(spared))
          errors.at_line(r.path, reject.line, reject.col, "RULE['rejects'] spares '" + spared + "', which is no rule's id");
  if (!errors.empty()) throw RuleError(errors.joined());
  std::sort(set.rules_.begin(), set.rules_.end(), [](const Rule& a, const Rule& b) { return a.id < b.id; });
  return set;
}

const Rule* RuleSet::find(std::string_view id) const {
  auto it = std::lower_bound(rules_.begin(), rules_.end(), id, [](const Rule& r, std::string_view v) { return r.id < v; });
  return it != rules_.end() && it->id == id ? &*it : nullptr;
}

}  // namespace npufuse::rules
