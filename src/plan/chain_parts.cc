#include "plan/chain_parts.h"

#include <algorithm>
#include <map>
#include <string>

#include "match/op_signature.h"
#include "match/size_expression.h"
#include "model/function_index.h"

namespace npufuse::plan {

ChainParts chain_parts(const MatchSite& site, model::FunctionIndex* index) {
  const model::FunctionDataflow& g = *site.match.target;
  // A file's functions, from the model's index when there is one.
  std::map<const model::ModelFile*, std::vector<model::FunctionRange>> functions;
  auto functions_of = [&](const model::ModelFile& file) -> const std::vector<model::FunctionRange>& {
    if (index) return index->of(file);
    auto [it, fresh] = functions.try_emplace(&file);
    if (fresh) it->second = model::functions_of(file);
    return it->second;
  };
  // (file, function) -> the lines the chain's ops take there.
  std::map<std::pair<std::string, std::string>, Location> by_function;
  std::string primary_key;
  auto place = [&](const model::DataflowOp& op) -> std::pair<std::string, std::string> {
    const model::ModelFile* file = op.file ? op.file : g.file;
    if (!file) return {"", ""};
    const model::FunctionRange* f = model::function_at_line(functions_of(*file), op.line);
    return {file->path, f ? f->qualified : ""};
  };
  std::vector<std::pair<Location, std::string>> lines;
  for (int id : site.match.ops) {
    const model::DataflowOp& op = g.ops[static_cast<size_t>(id)];
    if (op.line <= 0) continue;
    // Index bookkeeping (`end_pos = start_pos + s`) stays in the model: it
    // does not place the chain.
    if (match::is_index_bookkeeping(g, op)) continue;
    std::pair<std::string, std::string> key = place(op);
    int last = std::max(op.line, op.end_line);
    // The lines that say which sub-chain steps the chain covers are those of
    // ops that compute. A merge after an if (phi) sits on the whole statement,
    // whose other arm is no part of the chain; a cast or a view the match
    // passed on its way to a parameter's value (the `.flatten(3).type_as(x)`
    // ending a RoPE helper whose result an attention core reads) sits on the
    // lines of the step that computed the value. (A view that moves data,
    // such as repeat_kv's expand, is part of what the fused operator does.)
    bool computes = op.name != "phi" && op.cls != model::OpClass::Cast && !match::is_layout_view(op.name);
    if (computes) lines.push_back({Location{key.first, op.line, last}, op.scope});
    auto [it, fresh] = by_function.try_emplace(key, Location{key.first, op.line, last});
    if (!fresh) {
      it->second.start_line = std::min(it->second.start_line, op.line);
      it->second.end_line = std::max(it->second.end_line, last);
    }
  }
  ChainParts out;
  std::sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second < b.second;
    return a.first.file != b.first.file ? a.first.file < b.first.file : a.first.start_line < b.first.start_line;
  });
  for (const auto& [l, scope] : lines) {
    Location* last = out.op_lines.empty() ? nullptr : &out.op_lines.back();
    if (last && out.op_scopes.back() == scope && last->file == l.file && l.start_line <= last->end_line + 1) {
      last->end_line = std::max(last->end_line, l.end_line);
    } else {
      out.op_lines.push_back(l);
      out.op_scopes.push_back(scope);
    }
  }
  for (const auto& [key, where] : by_function) out.parts.push_back(where);
  std::sort(out.parts.begin(), out.parts.end(), [](const Location& a, const Location& b) {
    return a.file != b.file ? a.file < b.file : a.start_line < b.start_line;
  });
  if (out.parts.empty()) return out;
  // The function matched is where the call goes; failing that, the place of
  // the chain's result.
  out.primary = out.parts.front();
  for (const auto& [key, where] : by_function) {
    if (key.second != site.function) continue;
    out.primary = where;
    return out;
  }
  // A chain across two copies of an unrolled layer loop (one layer's residual
  // add into the next one's input norm) runs in no line of the loop's own
  // function: the call goes in the outermost module code it runs in, the
  // layer's forward, not in the norm's.
  const model::DataflowOp* outermost = nullptr;
  for (int id : site.match.ops) {
    const model::DataflowOp& op = g.ops[static_cast<size_t>(id)];
    if (op.unrolled == 0 || op.line <= 0) continue;
    if (!outermost || std::count(op.scope.begin(), op.scope.end(), '.') <
                          std::count(outermost->scope.begin(), outermost->scope.end(), '.'))
      outermost = &op;
  }
  if (outermost) {
    if (auto it = by_function.find(place(*outermost)); it != by_function.end()) {
      out.primary = it->second;
      return out;
    }
  }
  for (int anchor : site.match.anchors) {
    if (anchor < 0 || static_cast<size_t>(anchor) >= g.values.size()) continue;
    int producer = g.values[static_cast<size_t>(anchor)].producer;
    if (producer < 0) continue;
    if (auto it = by_function.find(place(g.ops[static_cast<size_t>(producer)])); it != by_function.end()) {
      out.primary = it->second;
      return out;
    }
  }
  return out;
}

}  // namespace npufuse::plan
