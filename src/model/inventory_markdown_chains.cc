#include "model/inventory_markdown_chains.h"

#include <fmt/format.h>

namespace npufuse::model {

namespace {

std::string cell(std::string s) {
  for (size_t i = 0; (i = s.find('|', i)) != std::string::npos; i += 2) s.replace(i, 1, "\\|");
  return s;
}

std::string spans_text(const std::vector<SourceSpan>& spans) {
  std::string out;
  for (const SourceSpan& s : spans) {
    out += (out.empty() ? "" : ", ") + s.str();
    if (s.end_line > s.line) out += "-" + std::to_string(s.end_line);
  }
  return out;
}

}  // namespace

void render_chains(const std::vector<BlockChains>& blocks, Lang lang, std::string& out) {
  bool zh = lang == Lang::Zh;
  out += zh ? "## 子链\n\n" : "## Sub-chains\n\n";
  if (blocks.empty()) {
    out += zh ? "未找到解码层类，无法分解。\n\n" : "No decoder-layer class found; nothing to decompose.\n\n";
    return;
  }
  for (const BlockChains& b : blocks) {
    out += fmt::format("### `{}` (`{}`)\n\n", b.block_class, b.instance);
    for (const ModuleChain& m : b.modules) {
      out += fmt::format("#### {} — `{}` (`{}`)\n\n", m.module, m.class_name.empty() ? "?" : m.class_name, m.instance);
      if (!m.alternative.empty())
        out += fmt::format("- {}: `{}`{}\n", zh ? "备选构造" : "alternative", m.alternative,
                           m.default_graph ? "" : (zh ? "（在以此构造重建的前向图中分析）" : " (analysed in a forward rebuilt with it)"));
      if (m.module == "attention" || m.module == "mla")
        out += fmt::format("- {}: {}{}\n", zh ? "注意力核心布局" : "attention-core layout", m.layout.layout,
                           m.layout.evidence.empty() ? "" : " — " + m.layout.evidence);
      if (!m.missing.empty()) out += fmt::format("- {}: {}\n", zh ? "未找到的步骤" : "steps not found", fmt::join(m.missing, ", "));
      out += "\n";
      out += zh ? "| 步骤 | 位置 | 阶段 | 分支 | 说明 |\n|---|---|---|---|---|\n"
                : "| step | where | stage | branch arm | detail |\n|---|---|---|---|---|\n";
      for (const SubChainStep& s : m.steps)
        out += fmt::format("| {} | {} | {} | {} | {} |\n", s.kind, spans_text(s.spans), s.stages,
                           s.variant.empty() ? "—" : "`" + cell(s.variant) + "`", cell(s.detail));
      out += "\n";
      if (m.escapes.empty()) continue;
      out += zh ? "逸出链外的中间值：\n\n| 步骤 | 值 | 去向 |\n|---|---|---|\n"
                : "Intermediates that escape the chain:\n\n| step | value | how |\n|---|---|---|\n";
      for (const IntermediateEscape& e : m.escapes) out += fmt::format("| {} | `{}` | {} |\n", e.step, e.value, cell(e.how));
      out += "\n";
    }
  }
}

}  // namespace npufuse::model
