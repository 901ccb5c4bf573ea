// Intermediates that escape their chain: values computed in a step and read
// somewhere a fused operator replacing the chain would not provide them.
#include <algorithm>
#include <set>

#include "model/subchains_graph.h"

namespace npufuse::model::subchains {

namespace {

bool transparent(const DataflowOp& o) {
  return o.cls == OpClass::View || o.cls == OpClass::Cast || o.cls == OpClass::Slice ||
         (o.cls == OpClass::Structure && o.name != "setattr");
}

// Reads of a value's type or presence only (`isinstance(x, tuple)`, `len`, `append` to a list of outputs).
bool metadata_only(const DataflowOp& o) {
  return o.name == "isinstance" || o.name == "hasattr" || o.name == "len" || o.name == "is" || o.name == "is_not" ||
         o.name == "numel" || o.name == "size" || o.name == "dim" || o.name.find("append") != std::string::npos;
}

std::string at(const DataflowOp& o) { return (o.file ? o.file->path : std::string("?")) + ":" + std::to_string(o.line); }

SourceSpan span(const DataflowOp& o) { return SourceSpan{o.file ? o.file->path : std::string(), o.line, o.end_line}; }

}  // namespace

void find_escapes(const BlockGraph& bg, const std::vector<int>& module_ops, const OpSet& block_step_ops, ModuleChain& chain) {
  size_t n = bg.size();
  OpSet module_set = set_of(n, module_ops);
  OpSet chain_ops = make_set(n);
  OpSet cache_write_ops = make_set(n);
  for (const SubChainStep& s : chain.steps)
    for (int id : s.ops) {
      chain_ops[static_cast<size_t>(id)] = 1;
      if (s.kind == "cache_write") cache_write_ops[static_cast<size_t>(id)] = 1;
    }
  std::set<int> returns(bg.g.returns.begin(), bg.g.returns.end());
  std::set<std::string> seen;
  // The chain's own result (its last step) leaves the chain by design.
  int last_op = -1;
  for (const SubChainStep& s : chain.steps)
    for (int id : s.ops) last_op = std::max(last_op, id);
  for (const SubChainStep& s : chain.steps) {
    bool final_step = std::find(s.ops.begin(), s.ops.end(), last_op) != s.ops.end();
    for (int id : s.ops) {
      const DataflowOp& producer = bg.op(id);
      if (producer.cls == OpClass::Constant || producer.cls == OpClass::Attribute) continue;
      for (int value : producer.outputs) {
        std::string name = bg.g.values[static_cast<size_t>(value)].name;
        if (name.empty()) name = "v" + std::to_string(value);
        auto report = [&](const std::string& how, const SourceSpan& where) {
          std::string key = s.kind + "|" + name + "|" + how;
          if (!seen.insert(key).second) return;
          chain.escapes.push_back(IntermediateEscape{s.kind, name, how, where});
        };
        // Follow the value through views, casts and tuple packing outside the
        // steps; a value packed into a tuple follows only its own element out
        // of an unpacking.
        std::vector<std::pair<int, int>> stack = {{value, -1}};
        std::set<std::pair<int, int>> visited;
        auto [p_stage, p_variant] = arm_of(bg, producer);
        while (!stack.empty()) {
          auto [v, element] = stack.back();
          stack.pop_back();
          if (!visited.insert({v, element}).second || visited.size() > 512) continue;
          if (returns.count(v) && s.kind != "residual_add" && !final_step) report("returned from the block", span(producer));
          for (int c : bg.consumers(v)) {
            const DataflowOp& use = bg.op(c);
            size_t ci = static_cast<size_t>(c);
            if (chain_ops[ci]) {
              // A cache write inside the chain still needs the value materialised.
              if (cache_write_ops[ci] && s.kind != "cache_write" && s.kind != "cache_read")
                report("written to the cache at " + at(use), span(use));
              continue;
            }
            if (block_step_ops[ci] || use.cls == OpClass::Attribute || metadata_only(use)) continue;
            if (use.name == "setattr") {
              report("stored on self (`" + bg.text(use) + "`)", span(use));
              continue;
            }
            if (use.cls == OpClass::Structure && (use.name == "tuple" || use.name == "list")) {
              for (size_t i = 0; i < use.inputs.size(); ++i)
                if (use.inputs[i] == v) stack.push_back({use.outputs[0], static_cast<int>(i)});
              continue;
            }
            if (use.cls == OpClass::Structure && use.name == "unpack") {
              if (element >= 0 && static_cast<size_t>(element) < use.outputs.size()) stack.push_back({use.outputs[static_cast<size_t>(element)], -1});
              else if (element < 0)
                for (int out : use.outputs) stack.push_back({out, -1});
              continue;
            }
            if (transparent(use)) {
              for (int out : use.outputs) stack.push_back({out, use.cls == OpClass::Structure ? element : -1});
              continue;
            }
            auto [c_stage, c_variant] = arm_of(bg, use);
            bool other_arm = (!p_stage.empty() && !c_stage.empty() && p_stage != c_stage) ||
                             (!p_variant.empty() && !c_variant.empty() && p_variant != c_variant);
            std::string branch = other_arm ? " in another branch (`" + use.condition + "`)" : "";
            if (use.cls == OpClass::Call) report("passed to `" + use.name + "` at " + at(use) + branch, span(use));
            else if (!module_set[ci]) report("read by " + use.name + " at " + at(use) + branch, span(use));
            else if (other_arm) report("used by " + use.name + " at " + at(use) + branch, span(use));
          }
        }
      }
    }
  }
}

}  // namespace npufuse::model::subchains
