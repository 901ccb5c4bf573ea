#include "apply/torch_npu_import.h"

#include "apply/source_functions.h"
#include "frontend/ast.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

bool imports_torch_npu(const ast::stmt* s) {
  if (auto* imp = ast::as<ast::Import>(s))
    for (const ast::alias* a : imp->names)
      if (a->name == "torch_npu" && !ast::present(a->asname)) return true;
  return false;
}

}  // namespace

std::optional<Edit> torch_npu_import(const model::ModelFile& file) {
  const frontend::SourceFile& source = file.parsed->source;
  const ast::Module& module = *file.parsed->module;
  for (const ast::stmt* s : module.body)
    if (imports_torch_npu(s)) return std::nullopt;

  const ast::stmt* after = nullptr;  // the statement the import goes below
  for (const ast::stmt* s : module.body) {
    bool import = ast::as<ast::Import>(s) || ast::as<ast::ImportFrom>(s);
    if (import || (!after && is_docstring(s))) after = s;
    else break;
  }
  uint32_t at = 0;
  if (after) {
    // The start of the line after the statement (keeping a trailing comment on its line).
    int next_line = after->end_lineno + 1;
    at = next_line <= source.line_count() ? source.line_start(next_line) : static_cast<uint32_t>(source.text().size());
  }
  std::string text = "import torch_npu\n";
  // A file whose last line has no newline gets one before the import.
  if (at == source.text().size() && at > 0 && source.text().back() != '\n') text = "\n" + text;
  return Edit{file.path, at, at, text, ""};
}

}  // namespace npufuse::apply
