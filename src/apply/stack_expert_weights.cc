#include "apply/stack_expert_weights.h"

#include <fmt/format.h>

#include <optional>

#include "apply/chain_rewrite.h"
#include "apply/source_functions.h"
#include "apply/text_rule.h"
#include "model/ast_walk.h"
#include "rules/rule.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;

// "self.experts[].gate_proj.weight" -> {"experts", "gate_proj"}.
std::optional<std::pair<std::string, std::string>> expert_weight(const std::string& text) {
  const std::string head = "self.", tail = ".weight";
  size_t bracket = text.find("[].");
  if (text.rfind(head, 0) != 0 || bracket == std::string::npos || text.size() < tail.size() ||
      text.compare(text.size() - tail.size(), tail.size(), tail) != 0)
    return std::nullopt;
  std::string list = text.substr(head.size(), bracket - head.size());
  std::string layer = text.substr(bracket + 3, text.size() - tail.size() - bracket - 3);
  if (list.find_first_of(".[") != std::string::npos || layer.empty() || layer.find_first_of(".[") != std::string::npos)
    return std::nullopt;
  return std::make_pair(list, layer);
}

// The class the experts are made of: `nn.ModuleList([Cls(...) for ...])`.
std::string expert_class(const ast::Assign& list) {
  auto* call = ast::as<ast::Call>(list.value);
  if (!call || call->args.size != 1) return "";
  auto* comp = ast::as<ast::ListComp>(call->args[0]);
  auto* made = comp ? ast::as<ast::Call>(comp->elt) : nullptr;
  auto* name = made ? ast::as<ast::Name>(made->func) : nullptr;
  return name ? std::string(name->id) : "";
}

bool has_keyword(const ast::Call& call, std::string_view name, std::string_view value, const model::ModelFile& f) {
  for (const ast::keyword* k : call.keywords)
    if (ast::present(k->arg) && k->arg == name) return text_of(f, k->value) == value;
  return false;
}

std::string hook_factory_text() {
  return fmt::format(
      "def {}(experts, gate, up, down):\n"
      "    # Checkpoints keep one module per expert: stack their weights in the grouped matmul's (K, N) layout on load.\n"
      "    def hook(state_dict, prefix, *unused):\n"
      "        def key(e, part):\n"
      "            return f\"{{prefix}}{{experts}}.{{e}}.{{part}}.weight\"\n"
      "        count = 0\n"
      "        while key(count, gate) in state_dict:\n"
      "            count += 1\n"
      "        if count == 0:\n"
      "            return\n"
      "        gate_up = [torch.cat([state_dict.pop(key(e, gate)), state_dict.pop(key(e, up))], dim=0).t() for e in range(count)]\n"
      "        state_dict[prefix + \"npu_w_gate_up\"] = torch.stack(gate_up)\n"
      "        state_dict[prefix + \"npu_w_down\"] = torch.stack([state_dict.pop(key(e, down)).t() for e in range(count)])\n"
      "    return hook\n\n\n",
      kStackHookName);
}

// The expert loop rewritten against the stacked weights.
const char* const kStackedForward =
    "def replace(tokens, routing_weights, expert_ids, w_gate_up, w_down, num_experts, shared):\n"
    "    rows, k = expert_ids.shape\n"
    "    ids = expert_ids.to(torch.int32)\n"
    "    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(\n"
    "        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,\n"
    "        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])\n"
    "    hidden = torch_npu.npu_grouped_matmul([sorted_rows], [w_gate_up], group_list=counts, group_type=0,\n"
    "                                          group_list_type=1, split_item=2)[0]\n"
    "    hidden = torch_npu.npu_swiglu(hidden, dim=-1)\n"
    "    out = torch_npu.npu_grouped_matmul([hidden], [w_down], group_list=counts, group_type=0,\n"
    "                                       group_list_type=1, split_item=2)[0]\n"
    "    return torch_npu.npu_moe_finalize_routing(out, shared, None, None, routing_weights.to(out.dtype), row_map, ids,\n"
    "                                              drop_pad_mode=2)\n";


}  // namespace

StackedExperts stack_expert_weights(const plan::Candidate& c, const model::SourceSet& sources) {
  StackedExperts out;
  out.where = fmt::format("{}:{}", c.location.file, c.location.start_line);
  auto refuse = [&](std::string why) {
    out.refusal = std::move(why);
    out.edits.clear();
    return out;
  };
  if (c.rule != "moe.experts_grouped_matmul") return refuse(fmt::format("apply stacks experts only for moe.experts_grouped_matmul"));
  auto gate = expert_weight(c.binding("gate_weights"));
  auto up = expert_weight(c.binding("up_weights"));
  auto down = expert_weight(c.binding("down_weights"));
  if (!gate || !up || !down || gate->first != up->first || gate->first != down->first)
    return refuse("the expert weights are not self.<experts>[e].<projection>.weight of one module list");
  const std::string list = gate->first;
  const std::string num_experts = c.binding("num_experts");
  if (num_experts.empty())
    return refuse("the loop's expert count is not bound (it runs over a slice of the experts?): which experts this module "
                  "holds is not known");
  size_t dot = c.apply_function.find('.');
  if (dot == std::string::npos) return refuse("the expert loop is not in a module's method");
  const std::string owner = c.apply_function.substr(0, dot);
  std::optional<FunctionAt> forward = function_named(sources, c.apply_function);
  if (!forward) return refuse("the module's forward is not found");
  const model::ModelFile& file = *forward->file;
  const ast::ClassDef* cls = class_named(file, owner);
  const ast::FunctionDef* init = cls ? method_named(*cls, "__init__") : nullptr;
  if (!init) return refuse(fmt::format("{} has no __init__ in {}", owner, file.path));
  const ast::Assign* made = self_assignment(*init, list);
  if (!made) return refuse(fmt::format("{}.__init__ does not assign self.{}", owner, list));
  bool taken = false;
  model::walk(cls, [&](const ast::Node* n) {
    if (auto* id = ast::as<ast::Name>(n); id && id->id == "npu_experts") taken = true;
    if (auto* a = ast::as<ast::Attribute>(n); a && (a->attr == "npu_w_gate_up" || a->attr == "npu_w_down")) taken = true;
    return !taken;
  });
  if (taken) return refuse(fmt::format("{} already uses npu_experts, npu_w_gate_up or npu_w_down", owner));
  const std::string expert = expert_class(*made);
  if (expert.empty())
    return refuse(fmt::format("self.{} is not nn.ModuleList([<Expert>(...) for ...]) (placeholders or a loop-built list "
                              "cannot be stacked as they are)",
                              list));
  // The expert class: exactly the three bias-free linear layers the chain reads.
  const model::ModelFile* expert_file = nullptr;
  const ast::ClassDef* expert_cls = nullptr;
  for (const auto& f : sources.files())
    if (const ast::ClassDef* k = class_named(*f, expert)) expert_file = f.get(), expert_cls = k;
  const ast::FunctionDef* expert_init = expert_cls ? method_named(*expert_cls, "__init__") : nullptr;
  if (!expert_init) return refuse(fmt::format("the expert class {} is not found with an __init__", expert));
  int layers = 0;
  std::string extra;
  model::walk(expert_init, [&](const ast::Node* n) {
    auto* call = ast::as<ast::Call>(n);
    if (!call) return true;
    std::string callee = text_of(*expert_file, call->func);
    if (callee.ends_with("Linear")) ++layers;
    if (callee.ends_with("Parameter") || callee.ends_with("register_buffer")) extra = callee;
    return true;
  });
  for (const std::string& layer : {gate->second, up->second, down->second}) {
    const ast::Assign* a = self_assignment(*expert_init, layer);
    auto* call = a ? ast::as<ast::Call>(a->value) : nullptr;
    if (!call || !text_of(*expert_file, call->func).ends_with("Linear") || !has_keyword(*call, "bias", "False", *expert_file))
      return refuse(fmt::format("{}.{} is not a Linear(..., bias=False) assigned alone in {}.__init__", expert, layer, expert));
  }
  if (layers != 3 || !extra.empty())
    return refuse(fmt::format("{} holds more than its gate, up and down projections ({}): stacking would drop them", expert,
                              extra.empty() ? fmt::format("{} linear layers", layers) : extra));
  // The forward against the stacked weights.
  static const TextRule stacked("moe.experts_grouped_matmul (stacked experts)", "<stack_expert_weights>", kStackedForward);
  plan::Candidate bound = c;
  bound.apply_bindings.clear();
  bound.apply_binding_origins.clear();
  bound.apply_binding_viewed.clear();  // the bindings are new: nothing the chain views
  for (size_t i = 0; i < c.apply_bindings.size(); ++i) {
    const std::string& p = c.apply_bindings[i].first;
    if (p == "gate_weights" || p == "up_weights" || p == "down_weights") continue;
    bound.apply_bindings.push_back(c.apply_bindings[i]);
    bound.apply_binding_origins.push_back(i < c.apply_binding_origins.size() ? c.apply_binding_origins[i]
                                                                              : plan::Candidate::BindingOrigin{});
  }
  bound.apply_bindings.emplace_back("w_gate_up", "self.npu_w_gate_up");
  bound.apply_binding_origins.emplace_back();
  bound.apply_bindings.emplace_back("w_down", "self.npu_w_down");
  bound.apply_binding_origins.emplace_back();
  if (c.binding("shared").empty()) {
    bound.apply_bindings.emplace_back("shared", "None");
    bound.apply_binding_origins.emplace_back();
  }
  ChainRewrite forward_edit = rewrite_chain(bound, sources, stacked.rule);
  if (!forward_edit.edit) {
    out.where = forward_edit.where;
    return refuse(forward_edit.refusal);
  }

  // Nothing else reads the list: it is gone after the patch.
  std::string other_use;
  for (const auto& f : sources.files())
    model::walk(f->parsed->module, [&](const ast::Node* n) {
      auto* a = ast::as<ast::Attribute>(n);
      if (!a || a->attr != list || !other_use.empty()) return other_use.empty();
      bool in_init = f.get() == &file && n->begin >= made->begin && n->end <= made->end;
      // The statements the rewrite replaces (the loop with its `e = self.experts[i]`).
      bool in_chain = f->path == forward_edit.edit->file && forward_edit.edit->begin <= n->begin &&
                      n->end <= forward_edit.edit->end;
      if (!in_init && !in_chain) other_use = fmt::format("{}:{}", f->path, a->lineno);
      return true;
    });
  if (!other_use.empty()) return refuse(fmt::format("self.{} is also used at {}", list, other_use));

  const frontend::SourceFile& src = file.parsed->source;
  std::string indent(static_cast<size_t>(made->col_offset), ' ');
  out.edits.push_back(Edit{
      file.path, made->begin, made->end,
      fmt::format("npu_experts = {0}\n"
                  "{1}# The experts' weights stacked for the grouped matmul: [E, H, 2I] (gate, then up) and [E, I, H].\n"
                  "{1}self.npu_w_gate_up = nn.Parameter(\n"
                  "{1}    torch.stack([torch.cat([e.{2}.weight, e.{3}.weight], dim=0).t() for e in npu_experts]).detach())\n"
                  "{1}self.npu_w_down = nn.Parameter(torch.stack([e.{4}.weight.t() for e in npu_experts]).detach())\n"
                  "{1}self._register_load_state_dict_pre_hook({5}(\"{6}\", \"{2}\", \"{3}\", \"{4}\"))",
                  text_of(file, made->value), indent, gate->second, up->second, down->second, kStackHookName, list),
      c.id});
  out.edits.push_back(*forward_edit.edit);
  uint32_t class_line = src.line_start(cls->decorator_list.size ? cls->decorator_list[0]->lineno : cls->lineno);
  out.helper = Edit{file.path, class_line, class_line, hook_factory_text(), c.id};
  out.expert_class = expert;
  return out;
}

}  // namespace npufuse::apply
