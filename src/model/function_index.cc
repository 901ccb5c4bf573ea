#include "model/function_index.h"

#include <algorithm>

namespace npufuse::model {
namespace {

void collect(const ModelFile& file, Span<ast::stmt*> body, const std::string& prefix, bool in_class,
             std::vector<FunctionRange>& out) {
  for (const ast::stmt* s : body) {
    std::string_view name;
    Span<ast::stmt*> inner;
    const ast::FunctionDef* fn = nullptr;
    if (const auto* f = ast::as<ast::FunctionDef>(s)) {
      fn = f;
      name = f->name;
      inner = f->body;
    } else if (const auto* f = ast::as<ast::AsyncFunctionDef>(s)) {
      name = f->name;
      inner = f->body;
    } else if (const auto* c = ast::as<ast::ClassDef>(s)) {
      collect(file, c->body, prefix + std::string(c->name) + ".", true, out);
      continue;
    } else {
      continue;
    }
    SourceSpan span = file.span_of(s);
    FunctionRange r;
    r.fn = fn;
    r.qualified = prefix + std::string(name);
    r.is_method = in_class;
    r.first_line = span.line;
    r.last_line = span.end_line > 0 ? span.end_line : span.line;
    r.body_begin = inner.size > 0 ? inner[0]->begin : s->end;
    r.end = s->end;
    out.push_back(r);
    collect(file, inner, r.qualified + ".<locals>.", false, out);
  }
}

}  // namespace

std::vector<FunctionRange> functions_of(const ModelFile& file) {
  std::vector<FunctionRange> out;
  if (file.parsed && file.parsed->module) collect(file, file.parsed->module->body, "", false, out);
  return out;
}

const FunctionRange* function_at_line(const std::vector<FunctionRange>& functions, int line) {
  // functions_of lists functions in source order, a nested one after the
  // function holding it, so the innermost function holding `line` is the
  // last one that starts at or before it and has not ended.
  auto after = std::upper_bound(functions.begin(), functions.end(), line,
                                [](int l, const FunctionRange& f) { return l < f.first_line; });
  while (after != functions.begin()) {
    --after;
    if (line <= after->last_line) return &*after;
  }
  return nullptr;
}

const FunctionRange* function_around(const std::vector<FunctionRange>& functions, uint32_t begin, uint32_t end) {
  const FunctionRange* best = nullptr;
  for (const FunctionRange& f : functions) {
    if (f.body_begin >= f.end || begin < f.body_begin || end > f.end) continue;
    if (!best || f.end - f.body_begin < best->end - best->body_begin) best = &f;
  }
  return best;
}

const FunctionRange* FunctionIndex::at_line(const std::string& path, int line) {
  auto it = by_file_.find(path);
  if (it == by_file_.end()) {
    const ModelFile* file = nullptr;
    for (const auto& f : sources_.files())
      if (f->path == path) file = f.get();
    if (!file) return nullptr;
    it = by_file_.emplace(path, functions_of(*file)).first;
  }
  return function_at_line(it->second, line);
}

const std::vector<FunctionRange>& FunctionIndex::of(const ModelFile& file) {
  auto it = by_file_.find(file.path);
  if (it == by_file_.end()) it = by_file_.emplace(file.path, functions_of(file)).first;
  return it->second;
}

}  // namespace npufuse::model
