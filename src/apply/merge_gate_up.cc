#include "apply/merge_gate_up.h"

#include <fmt/format.h>

#include "apply/chain_rewrite.h"
#include "apply/source_functions.h"
#include "apply/text_rule.h"
#include "model/ast_walk.h"
#include "rules/rule.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

// "self.gate_proj.weight" -> "gate_proj"; empty when the binding is not a
// direct submodule's weight.
std::string projection_of(const plan::Candidate& c, const std::string& parameter) {
  const std::string text = c.binding(parameter);
  const std::string head = "self.", tail = ".weight";
  if (text.size() <= head.size() + tail.size() || text.rfind(head, 0) != 0 ||
      text.compare(text.size() - tail.size(), tail.size(), tail) != 0)
    return "";
  std::string name = text.substr(head.size(), text.size() - head.size() - tail.size());
  return name.find('.') == std::string::npos ? name : "";
}

std::string hook_factory_text() {
  return fmt::format(
      "def {}(parts, into):\n"
      "    # Checkpoints keep the merged projections apart: concatenate their rows, in order, on load.\n"
      "    def hook(state_dict, prefix, *unused):\n"
      "        for suffix in (\".weight\", \".bias\"):\n"
      "            names = [prefix + part + suffix for part in parts]\n"
      "            if all(name in state_dict for name in names):\n"
      "                state_dict[prefix + into + suffix] = torch.cat([state_dict.pop(name) for name in names], dim=0)\n"
      "    return hook\n\n\n",
      kMergeHookName);
}


}  // namespace

MergeGateUp merge_gate_up(const plan::Candidate& c, const model::SourceSet& sources) {
  MergeGateUp out;
  out.where = fmt::format("{}:{}", c.location.file, c.location.start_line);
  auto refuse = [&](std::string why) {
    out.refusal = std::move(why);
    out.edits.clear();
    return out;
  };
  std::string gate = projection_of(c, "gate_weight"), up = projection_of(c, "up_weight"),
              down = projection_of(c, "down_weight");
  std::string x = c.binding("x");
  if (gate.empty() || up.empty() || down.empty() || x.empty())
    return refuse("the gate, up and down weights are not direct submodules' weights (self.<name>.weight)");
  size_t dot = c.apply_function.find('.');
  if (dot == std::string::npos) return refuse("the chain is not in a module's method");
  std::string owner = c.apply_function.substr(0, dot);
  std::optional<FunctionAt> forward = function_named(sources, c.apply_function);
  if (!forward) return refuse("the module's forward is not found");
  const model::ModelFile& file = *forward->file;
  const ast::ClassDef* cls = class_named(file, owner);
  const ast::FunctionDef* init = cls ? method_named(*cls, "__init__") : nullptr;
  if (!init) return refuse(fmt::format("{} has no __init__ in {}", owner, file.path));
  const ast::Assign* gate_init = self_assignment(*init, gate);
  const ast::Assign* up_init = self_assignment(*init, up);
  if (!gate_init || !up_init) return refuse(fmt::format("{}.__init__ does not assign self.{} and self.{}", owner, gate, up));
  auto* gate_call = ast::as<ast::Call>(gate_init->value);
  if (!gate_call || text_of(file, gate_init->value) != text_of(file, up_init->value) || gate_call->args.size < 2 ||
      !text_of(file, gate_call->func).ends_with("Linear"))
    return refuse(fmt::format("self.{} and self.{} are not the same Linear(in, out, ...) layer", gate, up));
  if (gate_init->end_lineno + 1 != up_init->lineno)
    return refuse(fmt::format("self.{} and self.{} are not assigned on consecutive lines", gate, up));
  const std::string merged = "gate_up_proj";
  bool taken = false;
  model::walk(cls, [&](const ast::Node* n) {
    if (auto* a = ast::as<ast::Attribute>(n); a && a->attr == merged) taken = true;
    return !taken;
  });
  if (taken) return refuse(fmt::format("{} already has an attribute {}", owner, merged));

  // The forward: the chain rewritten against the merged layer.
  static const TextRule merged_forward("ffn.swiglu (merged gate_up)", "<merge_gate_up>",
                                       "def replace(x, down_proj, gate_up_proj):\n"
                                       "    return down_proj(torch_npu.npu_swiglu(gate_up_proj(x), dim=-1))\n");
  plan::Candidate bound = c;
  bound.apply_bindings = {{"x", x}, {"down_proj", "self." + down}, {"gate_up_proj", "self." + merged}};
  bound.apply_binding_viewed.clear();  // the bindings are new: nothing the chain views
  ChainRewrite forward_edit = rewrite_chain(bound, sources, merged_forward.rule);
  if (!forward_edit.edit) {
    out.where = forward_edit.where;
    return refuse(forward_edit.refusal);
  }

  // Every other use of the two layers would break once they are gone.
  std::string other_use;
  model::walk(cls, [&](const ast::Node* n) {
    auto* a = ast::as<ast::Attribute>(n);
    if (!a || (a->attr != gate && a->attr != up) || !other_use.empty()) return other_use.empty();
    bool in_init = (n->begin >= gate_init->begin && n->end <= gate_init->end) || (n->begin >= up_init->begin && n->end <= up_init->end);
    bool in_chain = n->begin >= forward_edit.edit->begin && n->end <= forward_edit.edit->end;
    if (!in_init && !in_chain) other_use = fmt::format("{}:{}", file.path, a->lineno);
    return true;
  });
  if (!other_use.empty()) return refuse(fmt::format("self.{} or self.{} is also used at {}", gate, up, other_use));
  // Outside the class, a read through another object (`e.gate_proj.weight`
  // over a module list of this class) would find the layer gone.
  for (const auto& f : sources.files())
    model::walk(f->parsed->module, [&](const ast::Node* n) {
      auto* a = ast::as<ast::Attribute>(n);
      if (!a || (a->attr != gate && a->attr != up) || !other_use.empty()) return other_use.empty();
      bool inside = f.get() == &file && n->begin >= cls->begin && n->end <= cls->end;
      auto* base = ast::as<ast::Name>(a->value);
      if (!inside && !(base && base->id == "self")) other_use = fmt::format("{}:{}", f->path, a->lineno);
      return true;
    });
  if (!other_use.empty()) return refuse(fmt::format("{}'s {} or {} is also read at {}", owner, gate, up, other_use));

  const frontend::SourceFile& src = file.parsed->source;
  std::string indent(static_cast<size_t>(gate_init->col_offset), ' ');
  std::string out_features = text_of(file, gate_call->args[1]);
  std::string call = text_of(file, gate_init->value);
  // Twice the output width: the second positional argument is rewritten in place.
  uint32_t arg_begin = gate_call->args[1]->begin - gate_init->value->begin;
  uint32_t arg_end = gate_call->args[1]->end - gate_init->value->begin;
  bool plain = out_features.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") == std::string::npos;
  std::string wide = call.substr(0, arg_begin) + "2 * " + (plain ? out_features : "(" + out_features + ")") + call.substr(arg_end);
  out.edits.push_back(Edit{file.path, gate_init->begin, gate_init->end,
                           fmt::format("self.{} = {}\n{}self._register_load_state_dict_pre_hook({}((\"{}\", \"{}\"), \"{}\"))",
                                       merged, wide, indent, kMergeHookName, gate, up, merged),
                           c.id});
  uint32_t up_line = src.line_start(up_init->lineno);
  uint32_t after_up = up_init->end_lineno + 1 <= src.line_count() ? src.line_start(up_init->end_lineno + 1)
                                                                     : static_cast<uint32_t>(src.text().size());
  out.edits.push_back(Edit{file.path, up_line, after_up, "", c.id});
  out.edits.push_back(*forward_edit.edit);
  uint32_t class_line = src.line_start(cls->decorator_list.size ? cls->decorator_list[0]->lineno : cls->lineno);
  out.helper = Edit{file.path, class_line, class_line, hook_factory_text(), c.id};
  return out;
}

}  // namespace npufuse::apply
