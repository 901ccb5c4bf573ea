#include "model/source_set.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "util/file_io.h"

namespace npufuse::model {

namespace fs = std::filesystem;

std::string_view ModelFile::text_of(const ast::Node* n) const {
  if (!n) return {};
  return parsed->source.text().substr(n->begin, n->end - n->begin);
}

SourceSpan ModelFile::span_of(const ast::Node* n) const {
  SourceSpan s;
  s.file = path;
  if (n) {
    s.line = parsed->source.line_col(n->begin).line;
    s.end_line = parsed->source.line_col(n->end > n->begin ? n->end - 1 : n->begin).line;
  }
  return s;
}

std::string dotted_name(const ast::expr* e) {
  if (auto* n = ast::as<ast::Name>(e)) return std::string(n->id);
  if (auto* a = ast::as<ast::Attribute>(e)) {
    std::string head = dotted_name(a->value);
    if (head.empty()) return {};
    return head + "." + std::string(a->attr);
  }
  return {};
}

namespace {

// Imports at module level and inside top-level `if`/`try` blocks (HF guards
// optional imports with `if is_x_available():`).
void collect_imports(const Span<ast::stmt*>& body, std::map<std::string, std::string, std::less<>>& aliases,
                     std::vector<std::string>& relative_modules);

void collect_import_stmt(const ast::stmt* s, std::map<std::string, std::string, std::less<>>& aliases,
                         std::vector<std::string>& relative_modules) {
  if (auto* imp = ast::as<ast::Import>(s)) {
    for (const ast::alias* a : imp->names) {
      std::string full(a->name);
      if (ast::present(a->asname)) {
        aliases[std::string(a->asname)] = full;
      } else {
        // `import torch.nn` binds `torch`.
        std::string head = full.substr(0, full.find('.'));
        aliases[head] = head;
      }
    }
  } else if (auto* from = ast::as<ast::ImportFrom>(s)) {
    std::string base(std::string(from->level, '.'));
    if (ast::present(from->module)) base += std::string(from->module);
    if (from->level == 1 && ast::present(from->module)) relative_modules.emplace_back(from->module);
    for (const ast::alias* a : from->names) {
      std::string local = ast::present(a->asname) ? std::string(a->asname) : std::string(a->name);
      std::string sep = (base.empty() || base.back() == '.') ? "" : ".";
      aliases[local] = base + sep + std::string(a->name);
    }
  } else if (auto* i = ast::as<ast::If>(s)) {
    collect_imports(i->body, aliases, relative_modules);
    collect_imports(i->orelse, aliases, relative_modules);
  } else if (auto* t = ast::as<ast::Try>(s)) {
    collect_imports(t->body, aliases, relative_modules);
  }
}

void collect_imports(const Span<ast::stmt*>& body, std::map<std::string, std::string, std::less<>>& aliases,
                     std::vector<std::string>& relative_modules) {
  for (const ast::stmt* s : body) collect_import_stmt(s, aliases, relative_modules);
}

std::unique_ptr<ModelFile> parse_model_file(const std::string& path, std::string bytes) {
  auto f = std::make_unique<ModelFile>();
  f->path = path;
  f->parsed = frontend::parse_file(path, std::move(bytes));
  return f;
}

std::vector<std::string> expand_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(p)) {
        if (entry.is_regular_file() && entry.path().extension() == ".py") found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace

void SourceSet::add_file(std::unique_ptr<ModelFile> f) {
  std::vector<std::string> ignored;
  collect_imports(f->parsed->module->body, f->aliases, ignored);
  files_.push_back(std::move(f));
  index(*files_.back());
}

void SourceSet::index(const ModelFile& f) {
  for (const ast::stmt* s : f.parsed->module->body) {
    if (auto* c = ast::as<ast::ClassDef>(s)) {
      ClassDecl d{c, &f};
      classes_.push_back(d);
      class_index_.try_emplace(std::string(c->name), d);
    } else if (auto* fn = ast::as<ast::FunctionDef>(s)) {
      function_index_.try_emplace(std::string(fn->name), FunctionDecl{fn, &f});
    } else if (auto* a = ast::as<ast::Assign>(s)) {
      for (const ast::expr* t : a->targets) {
        if (auto* n = ast::as<ast::Name>(t)) constant_index_.try_emplace(std::string(n->id), ConstantDecl{a->value, &f});
      }
    } else if (auto* an = ast::as<ast::AnnAssign>(s)) {
      if (auto* n = ast::as<ast::Name>(an->target); n && an->value)
        constant_index_.try_emplace(std::string(n->id), ConstantDecl{an->value, &f});
    }
  }
}

SourceSet SourceSet::load(const std::vector<std::string>& paths) {
  SourceSet set;
  std::set<std::string> seen;
  std::vector<std::string> queue = expand_paths(paths);
  for (size_t i = 0; i < queue.size(); ++i) {
    std::string canonical = fs::weakly_canonical(queue[i]).string();
    if (!seen.insert(canonical).second) continue;
    auto f = parse_model_file(queue[i], read_file(queue[i]));
    std::map<std::string, std::string, std::less<>> aliases;
    std::vector<std::string> relative;
    collect_imports(f->parsed->module->body, aliases, relative);
    fs::path dir = fs::path(queue[i]).parent_path();
    for (const std::string& mod : relative) {
      std::string rel = mod;
      std::replace(rel.begin(), rel.end(), '.', '/');
      fs::path candidate = dir / (rel + ".py");
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec)) queue.push_back(candidate.string());
    }
    set.add_file(std::move(f));
  }
  return set;
}

SourceSet SourceSet::from_texts(const std::vector<std::pair<std::string, std::string>>& files) {
  SourceSet set;
  for (const auto& [path, text] : files) set.add_file(parse_model_file(path, text));
  return set;
}

const ClassDecl* SourceSet::find_class(std::string_view name) const {
  auto it = class_index_.find(name);
  return it == class_index_.end() ? nullptr : &it->second;
}

const FunctionDecl* SourceSet::find_function(std::string_view name) const {
  auto it = function_index_.find(name);
  return it == function_index_.end() ? nullptr : &it->second;
}

const ConstantDecl* SourceSet::find_constant(std::string_view name) const {
  auto it = constant_index_.find(name);
  return it == constant_index_.end() ? nullptr : &it->second;
}

std::string SourceSet::qualified_name(const ModelFile& file, const ast::expr* e) const {
  std::string dotted = dotted_name(e);
  if (dotted.empty()) return {};
  std::string head = dotted.substr(0, dotted.find('.'));
  std::string rest = dotted.size() > head.size() ? dotted.substr(head.size()) : "";
  // A name defined in the analysed files is itself, even when also imported.
  if (rest.empty() && (find_class(head) || find_function(head))) return head;
  auto it = file.aliases.find(head);
  if (it == file.aliases.end()) return dotted;
  std::string target = it->second;
  if (!target.empty() && target[0] == '.') {
    // A relative import of a local definition resolves to that definition.
    std::string last = target.substr(target.rfind('.') + 1);
    if (find_class(last) || find_function(last)) return last + rest;
  }
  return target + rest;
}

void visit_reached_functions(const SourceSet& sources, const std::function<std::set<std::string>()>& called,
                             const std::function<void(const FunctionDecl&, const std::string& name)>& visit) {
  std::set<std::string> done;
  for (bool grew = true; grew;) {
    grew = false;
    for (const std::string& name : called()) {
      if (!done.insert(name).second) continue;
      if (const FunctionDecl* f = sources.find_function(name)) {
        visit(*f, name);
        grew = true;
      }
    }
  }
}

}  // namespace npufuse::model
