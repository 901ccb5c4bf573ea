#include "apply/config_fold.h"

#include <fmt/format.h>

#include <algorithm>

#include "apply/source_functions.h"

namespace npufuse::apply {
namespace {

namespace ast = frontend::ast;
using Ops = std::vector<std::pair<uint32_t, uint32_t>>;

bool inside(const std::pair<uint32_t, uint32_t>& op, uint32_t begin, uint32_t end) {
  return begin <= op.first && op.second <= end;
}

std::pair<uint32_t, uint32_t> span_of(const frontend::Span<ast::stmt*>& arm) {
  if (arm.size == 0) return {0, 0};
  return {arm[0]->begin, arm[arm.size - 1]->end};
}

const plan::Candidate::ConfigArm* arm_of(const ast::If* i, const plan::Candidate& c, const std::string& file) {
  for (const plan::Candidate::ConfigArm& a : c.apply_config_arms)
    if (a.test.file == file && a.test.begin == i->test->begin && a.test.end == i->test->end) return &a;
  return nullptr;
}

bool marked_optional(const ast::stmt* s, const plan::Candidate& c, const std::string& file) {
  return std::any_of(c.apply_optional_ifs.begin(), c.apply_optional_ifs.end(), [&](const plan::Candidate::SourceRange& r) {
    return r.file == file && r.begin == s->begin && r.end == s->end;
  });
}

void splice(std::vector<const ast::stmt*>& list, const Ops& ops, const plan::Candidate& c, const model::ModelFile& file,
            ConfigFolds& out) {
  std::vector<const ast::stmt*> spliced;
  for (const ast::stmt* s : list) {
    auto* i = ast::as<ast::If>(s);
    const plan::Candidate::ConfigArm* arm = i ? arm_of(i, c, file.path) : nullptr;
    bool holds_op = std::any_of(ops.begin(), ops.end(), [&](const auto& op) { return inside(op, s->begin, s->end); });
    if (!arm || !holds_op || marked_optional(s, c, file.path)) {
      spliced.push_back(s);
      continue;
    }
    int line = file.parsed->source.line_col(s->begin).line;
    if (std::any_of(ops.begin(), ops.end(), [&](const auto& op) { return inside(op, i->test->begin, i->test->end); })) {
      out.refusal = fmt::format("the chain's ops lie in the test of the if statement at {}:{}", file.path, line);
      return;
    }
    const frontend::Span<ast::stmt*>& taken = arm->then_arm ? i->body : i->orelse;
    std::pair<uint32_t, uint32_t> untaken = span_of(arm->then_arm ? i->orelse : i->body);
    if (untaken.second > untaken.first &&
        std::any_of(ops.begin(), ops.end(), [&](const auto& op) { return inside(op, untaken.first, untaken.second); })) {
      out.refusal = fmt::format("the chain's ops lie in the {} arm of the if statement at {}:{}, which this config does "
                                "not run ({})",
                                arm->then_arm ? "else" : "then", file.path, line, arm->value);
      return;
    }
    out.ifs.push_back(FoldedIf{i, arm, untaken});
    const ast::stmt* top = out.top_of(s);
    std::vector<const ast::stmt*> body(taken.begin(), taken.end());
    for (const ast::stmt* b : body) out.top[b] = top;
    splice(body, ops, c, file, out);
    if (!out.refusal.empty()) return;
    spliced.insert(spliced.end(), body.begin(), body.end());
  }
  list = std::move(spliced);
}

}  // namespace

const ast::stmt* ConfigFolds::top_of(const ast::stmt* s) const {
  auto it = top.find(s);
  return it == top.end() ? s : it->second;
}

bool ConfigFolds::dropped(uint32_t begin, uint32_t end) const {
  return std::any_of(ifs.begin(), ifs.end(), [&](const FoldedIf& f) {
    return f.untaken.second > f.untaken.first && f.untaken.first <= begin && end <= f.untaken.second;
  });
}

ConfigFolds fold_config_ifs(std::vector<const ast::stmt*>& list, const Ops& ops, const plan::Candidate& c,
                            const model::ModelFile& file) {
  ConfigFolds out;
  if (c.apply_config_arms.empty()) return out;
  std::vector<const ast::stmt*> folded = list;
  splice(folded, ops, c, file, out);
  if (out.refusal.empty()) list = std::move(folded);
  return out;
}

std::string fold_comment(const FoldedIf& f) {
  return fmt::format("# config fold: `if {}` -> {} arm ({})", f.arm->condition,
                     f.arm->then_arm ? "then" : "else", f.arm->value);
}

std::string reindented(const std::string& text, const std::string& from, const std::string& to) {
  if (from == to) return text;
  std::string out;
  size_t at = 0;
  for (;;) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) {
      out.append(text, at, std::string::npos);
      return out;
    }
    out.append(text, at, nl + 1 - at);
    at = nl + 1;
    if (text.compare(at, from.size(), from) == 0) {
      out += to;
      at += from.size();
    }
  }
}

std::string moved_text(const model::ModelFile& file, const ast::stmt* s, const std::string& to) {
  std::string from = own_line_indent(file, s).value_or("");
  const frontend::SourceFile& source = file.parsed->source;
  std::string_view text = source.text();
  // The comment lines right above it, as written.
  int first = s->lineno;
  while (first > 1) {
    uint32_t b = source.line_start(first - 1), e = source.line_start(first);
    std::string_view line = text.substr(b, e - b);
    size_t lead = line.find_first_not_of(" \t");
    if (lead == std::string_view::npos || line[lead] != '#') break;
    --first;
  }
  std::string comments;
  for (int l = first; l < s->lineno; ++l) {
    uint32_t b = source.line_start(l), e = source.line_start(l + 1);
    std::string_view line = text.substr(b, e - b);
    line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
    comments += std::string(line);
    comments += to;
  }
  return comments + reindented(text_of(file, s), from, to);
}

}  // namespace npufuse::apply
