#include "apply/module_buffer.h"

#include <fmt/format.h>

#include <set>

#include "model/ast_walk.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

std::set<std::string> reads_of(const ast::Node* n) {
  std::set<std::string> out;
  model::walk(n, [&](const ast::Node* x) {
    if (auto* name = ast::as<ast::Name>(x); name && name->ctx == ast::expr_context::Load) out.insert(std::string(name->id));
    return true;
  });
  return out;
}

}  // namespace

std::vector<ConstantLocal> constant_locals(const ast::FunctionDef& replace, const frontend::SourceFile& rule_source) {
  // Parameters and every local: a buffer's value is built in __init__, where
  // none of them exists, so it may read none (a local made from a constant
  // stays in the replacement, reading the buffer).
  std::set<std::string> varying;
  for (const ast::arg* a : replace.args->args) varying.insert(std::string(a->arg));
  for (const ast::arg* a : replace.args->kwonlyargs) varying.insert(std::string(a->arg));
  std::vector<ConstantLocal> out;
  for (const ast::stmt* s : replace.body) {
    auto* assign = ast::as<ast::Assign>(s);
    if (!assign) continue;
    bool constant = assign->targets.size == 1 && ast::as<ast::Name>(assign->targets[0]);
    for (const std::string& read : reads_of(assign->value)) constant = constant && !varying.count(read);
    std::string_view text = rule_source.text();
    if (constant)
      out.push_back(ConstantLocal{std::string(ast::as<ast::Name>(assign->targets[0])->id),
                                  std::string(text.substr(assign->value->begin, assign->value->end - assign->value->begin))});
    for (const ast::expr* t : assign->targets)
      model::walk(t, [&](const ast::Node* x) {
        if (auto* name = ast::as<ast::Name>(x)) varying.insert(std::string(name->id));
        return true;
      });
  }
  return out;
}

ModuleBuffers module_buffers(const FunctionAt& fn, const model::SourceSet& sources,
                             const std::vector<ConstantLocal>& constants, const std::string& candidate) {
  ModuleBuffers out;
  if (constants.empty()) return out;
  if (!fn.is_method) {
    out.refusal = fmt::format("{} is not a method, so there is no module to hold the buffer {} once", fn.qualified,
                              constants.front().name);
    return out;
  }
  std::string owner = fn.qualified.substr(0, fn.qualified.rfind('.'));
  std::optional<FunctionAt> init = function_named(sources, owner + ".__init__");
  if (!init || init->fn->body.size == 0) {
    out.refusal = fmt::format("{} has no __init__ to register the buffer {} in", owner, constants.front().name);
    return out;
  }
  const ast::stmt* last = init->fn->body[init->fn->body.size - 1];
  const frontend::SourceFile& source = init->file->parsed->source;
  uint32_t line_start = source.line_start(last->lineno);
  std::string indent(source.text().substr(line_start, last->begin - line_start));
  std::string text;
  for (const ConstantLocal& c : constants) {
    // Built once; not saved with the weights.
    text += fmt::format("\n{}self.register_buffer(\"{}\", {}, persistent=False)", indent, c.name, c.value);
    out.reads[c.name] = "self." + c.name;
  }
  out.edits.push_back(Edit{init->file->path, last->end, last->end, text, candidate});
  return out;
}

}  // namespace npufuse::apply
