#include "apply/source_functions.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

// Visits every function of `body`, with the class it is a method of.
template <class Fn>
void each_function(frontend::Span<ast::stmt*> body, const std::string& prefix, bool in_class, Fn&& visit) {
  for (const ast::stmt* s : body) {
    if (auto* fn = ast::as<ast::FunctionDef>(s)) {
      std::string name = prefix + std::string(fn->name);
      visit(fn, name, in_class);
      each_function(fn->body, name + ".<locals>.", false, visit);
    } else if (auto* cls = ast::as<ast::ClassDef>(s)) {
      each_function(cls->body, prefix + std::string(cls->name) + ".", true, visit);
    }
  }
}

}  // namespace

const model::ModelFile* file_named(const model::SourceSet& sources, const std::string& path) {
  for (const auto& f : sources.files())
    if (f->path == path) return f.get();
  return nullptr;
}

std::optional<FunctionAt> function_around(const model::ModelFile& file, uint32_t begin, uint32_t end) {
  std::optional<FunctionAt> best;
  each_function(file.parsed->module->body, "", false, [&](const ast::FunctionDef* fn, const std::string& name, bool method) {
    if (fn->body.size == 0) return;
    uint32_t body_begin = fn->body[0]->begin;
    if (begin < body_begin || end > fn->end) return;
    if (!best || fn->end - body_begin < best->fn->end - best->fn->body[0]->begin) best = FunctionAt{&file, fn, name, method};
  });
  return best;
}

std::optional<FunctionAt> function_named(const model::SourceSet& sources, const std::string& qualified) {
  for (const auto& f : sources.files()) {
    std::optional<FunctionAt> found;
    each_function(f->parsed->module->body, "", false, [&](const ast::FunctionDef* fn, const std::string& name, bool method) {
      if (!found && name == qualified) found = FunctionAt{f.get(), fn, name, method};
    });
    if (found) return found;
  }
  return std::nullopt;
}

}  // namespace npufuse::apply
