#include "model/inventory_markdown.h"

#include "model/inventory_markdown_chains.h"

#include <fmt/format.h>

#include <algorithm>

namespace npufuse::model {

namespace {

struct Words {
  const char* title;
  const char* files;
  const char* config;
  const char* no_config;
  const char* structure;
  const char* pipeline;
  const char* tree;
  const char* classes;
  const char* evidence;
  const char* attribute_header;
  const char* facts;
  const char* fact_header;
  const char* config_fields;
  const char* config_header;
  const char* not_computed;
  const char* not_computed_intro;
  const char* other_tops;
  const char* none;
  const char* yes;
  const char* no;
  const char* embedding;
  const char* blocks;
  const char* final_norm;
  const char* lm_head;
  const char* missing;
  const char* when;
  const char* inactive;
};

const Words kEn = {
    "Model inventory (workflow step 1)",
    "Files",
    "Config",
    "none: facts stay symbolic and are reported unknown",
    "Top-level structure",
    "Pipeline",
    "Module tree",
    "Module classes",
    "evidence",
    "| attribute | kind | class / value | sizes | condition | where |\n|---|---|---|---|---|---|",
    "Facts",
    "| fact | value | source |\n|---|---|---|",
    "Config fields read by the code",
    "| key | in config | read at |\n|---|---|---|",
    "Not computed yet",
    "These parts of the step-1 inventory are not computed by this version; nothing below or above stands for them.",
    "Other top-level module classes",
    "none",
    "yes",
    "no",
    "embedding",
    "blocks",
    "final norm",
    "LM head",
    "not found",
    "when",
    "inactive for this config",
};

const Words kZh = {
    "模型清单（工作流程第一步）",
    "文件",
    "配置",
    "未提供：事实保持符号形式，报告为未知",
    "顶层结构",
    "主干流程",
    "模块树",
    "模块类",
    "依据",
    "| 属性 | 类别 | 类 / 值 | 尺寸 | 条件 | 位置 |\n|---|---|---|---|---|---|",
    "事实",
    "| 事实 | 值 | 来源 |\n|---|---|---|",
    "代码读取的配置字段",
    "| 键 | 配置中存在 | 读取位置 |\n|---|---|---|",
    "尚未计算",
    "本版本尚未计算第一步清单的以下部分；本报告中任何内容都不代表这些部分。",
    "其他顶层模块类",
    "无",
    "是",
    "否",
    "嵌入",
    "块",
    "最终归一化",
    "LM 头",
    "未找到",
    "条件",
    "在此配置下不生效",
};

std::string sizes_text(const std::vector<SizeValue>& sizes) {
  std::string out;
  for (const SizeValue& s : sizes) {
    if (!out.empty()) out += ", ";
    out += s.label + "=" + s.value.display();
  }
  return out;
}

std::string escape_cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

void render_node(const ModuleNode& n, int depth, const Words& w, std::string& out) {
  std::string indent(static_cast<size_t>(depth) * 2, ' ');
  std::string name = n.attribute.empty() ? n.class_name : n.attribute;
  if (n.kind != AttributeKind::Submodule) name += "[*]";
  out += indent + "- `" + name + "`";
  if (n.kind != AttributeKind::Submodule && !n.count.text.empty()) out += " × " + n.count.display();
  if (!n.attribute.empty()) out += ": " + n.class_name;
  out += " — " + std::string(role_name(n.role));
  if (!n.position.empty()) out += " (" + n.position + ")";
  if (!n.sizes.empty()) out += " — " + sizes_text(n.sizes);
  if (!n.condition.empty()) out += " — " + std::string(w.when) + " `" + n.condition + "`";
  if (n.active && !*n.active) out += std::string(" — ") + w.inactive;
  if (!n.element_condition.empty()) out += " — " + std::string(w.when) + " `" + n.element_condition + "`";
  if (!n.note.empty()) out += " — " + n.note;
  out += " — " + n.where.str() + "\n";
  for (const ModuleNode& c : n.children) render_node(c, depth + 1, w, out);
}

std::string code_list(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "`" : ", `") + i + "`";
  return out.empty() ? "—" : out;
}

std::vector<std::string> minus(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const std::string& x : a)
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  return out;
}

void render_branches(const std::vector<BranchCondition>& branches, Lang lang, std::string& out) {
  bool zh = lang == Lang::Zh;
  out += zh ? "## 分支条件\n\n" : "## Branch conditions\n\n";
  if (branches.empty()) out += zh ? "无。\n\n" : "None.\n\n";
  std::string current;
  for (const BranchCondition& b : branches) {
    if (b.function != current) {
      current = b.function;
      out += fmt::format("### `{}`\n\n", current);
      out += zh ? "| 位置 | 形式 | 条件 | 类别 | 为真时 | 按配置取 | 通信 |\n|---|---|---|---|---|---|---|\n"
                : "| where | form | condition | kinds | true in | config takes | communication |\n|---|---|---|---|---|---|---|\n";
    }
    std::string kinds;
    for (BranchKind k : b.kinds) kinds += (kinds.empty() ? "" : ", ") + std::string(branch_kind_name(k));
    std::string arm = "—";
    if (!b.config_arm.empty()) {
      std::string which = b.config_arm == "then" ? (zh ? "真分支" : "then arm") : (zh ? "假分支" : "else arm");
      arm = fmt::format("{} (`{}`)", which, escape_cell(b.config_value));
    }
    out += fmt::format("| {} | {} | `{}` | {} | {} | {} | {} |\n", b.where.str(), b.form, escape_cell(b.condition),
                       kinds.empty() ? "—" : kinds, b.true_stage.empty() ? "—" : b.true_stage, arm, code_list(b.communication));
    auto next = &b + 1;
    if (next == branches.data() + branches.size() || next->function != current) out += "\n";
  }

  out += zh ? "## 预填充/解码差异\n\n" : "## Prefill/decode differences\n\n";
  bool any = false;
  for (const BranchCondition& b : branches) {
    if (std::find(b.kinds.begin(), b.kinds.end(), BranchKind::PrefillDecode) == b.kinds.end()) continue;
    any = true;
    std::string yes = b.true_stage.empty() ? (zh ? "条件为真" : "when true") : b.true_stage;
    std::string no = b.true_stage.empty() ? (zh ? "条件为假" : "when false") : opposite_stage(b.true_stage);
    out += fmt::format("- `{}` {} `{}`: {} {}: {}; {} {}: {}\n", b.function, b.where.str(), escape_cell(b.condition), yes,
                       zh ? "独有调用" : "only", code_list(minus(b.then_calls, b.else_calls)), no, zh ? "独有调用" : "only",
                       code_list(minus(b.else_calls, b.then_calls)));
  }
  out += any ? "\n" : (zh ? "未发现按阶段区分的分支。\n\n" : "No branch depends on the stage.\n\n");
}

void render_cache(const CacheOrganisation& c, Lang lang, std::string& out) {
  bool zh = lang == Lang::Zh;
  out += zh ? "## KV 缓存\n\n" : "## KV cache\n\n";
  out += fmt::format("{}: {}; {}: {}\n\n", zh ? "组织方式" : "organisation", c.organisation, zh ? "写入索引" : "write index",
                     c.write_index.empty() ? "—" : c.write_index);
  if (c.accesses.empty()) return;
  out += zh ? "| 位置 | 函数 | 机制 | 索引 | 代码 |\n|---|---|---|---|---|\n"
            : "| where | function | mechanism | index | code |\n|---|---|---|---|---|\n";
  for (const CacheAccess& a : c.accesses)
    out += fmt::format("| {} | `{}` | {} | {} | `{}` |\n", a.where.str(), a.function, a.mechanism,
                       a.write_index.empty() ? "—" : "`" + escape_cell(a.write_index) + "`", escape_cell(a.text));
  out += "\n";
}

std::string part(const PipelinePart& p, const Words& w) { return p.node ? "`" + p.node->path + "`" : std::string(w.missing); }

}  // namespace

std::string inventory_to_markdown(const Inventory& inv, Lang lang) {
  const Words& w = lang == Lang::Zh ? kZh : kEn;
  std::string out = fmt::format("# {}\n\n", w.title);
  out += std::string("- ") + w.files + ": ";
  for (size_t i = 0; i < inv.files.size(); ++i) out += (i ? ", " : "") + std::string("`") + inv.files[i] + "`";
  out += std::string("\n- ") + w.config + ": " + (inv.config_path.empty() ? std::string(w.no_config) : "`" + inv.config_path + "`") + "\n\n";

  out += fmt::format("## {}\n\n", w.structure);
  const ModelStructure& s = inv.structure;
  if (s.root) {
    out += fmt::format("`{}` ({}) — {}\n\n", s.root->class_name, role_name(s.root->role), s.root->where.str());
    std::string blocks = part(s.blocks, w);
    if (s.blocks.node) blocks = s.blocks.node->count.display() + " × `" + s.blocks.node->class_name + "` (" + blocks + ")";
    out += fmt::format("{}: {} {} → {} {} → {} {} → {} {}\n\n", w.pipeline, w.embedding, part(s.embedding, w), w.blocks, blocks,
                       w.final_norm, part(s.final_norm, w), w.lm_head, part(s.lm_head, w));
    for (const std::string& note : s.notes) out += "- " + note + "\n";
    if (!s.notes.empty()) out += "\n";
    out += fmt::format("### {}\n\n", w.tree);
    render_node(*s.root, 0, w, out);
    out += "\n";
  } else {
    for (const std::string& note : s.notes) out += "- " + note + "\n";
    out += "\n";
  }
  if (!s.other_roots.empty()) {
    out += std::string(w.other_tops) + ": ";
    for (size_t i = 0; i < s.other_roots.size(); ++i) out += (i ? ", " : "") + std::string("`") + s.other_roots[i] + "`";
    out += "\n\n";
  }

  out += fmt::format("## {}\n\n", w.classes);
  for (const ClassSummary& c : inv.classes) {
    out += fmt::format("### `{}` — {} — {}\n\n", c.cls->node->name, role_name(c.role.role), c.where.str());
    if (!c.role.evidence.empty()) {
      out += std::string(w.evidence) + ": ";
      for (size_t i = 0; i < c.role.evidence.size(); ++i) out += (i ? "; " : "") + c.role.evidence[i];
      out += "\n\n";
    }
    if (!c.forward_ops.empty() || !c.forward_calls.empty()) {
      out += "forward:";
      if (!c.forward_calls.empty()) {
        out += " calls";
        for (size_t i = 0; i < c.forward_calls.size(); ++i) out += (i ? " → " : " ") + std::string("`") + c.forward_calls[i] + "`";
        out += ";";
      }
      if (!c.forward_ops.empty()) {
        out += " ops";
        for (size_t i = 0; i < c.forward_ops.size(); ++i) out += (i ? ", " : " ") + c.forward_ops[i];
      }
      out += "\n\n";
    }
    if (c.attributes.empty()) continue;
    out += std::string(w.attribute_header) + "\n";
    for (const Attribute& a : c.attributes) {
      std::string what;
      if (a.kind == AttributeKind::Submodule || a.kind == AttributeKind::ModuleList || a.kind == AttributeKind::ModuleDict)
        what = a.module.written.empty() ? a.module.qualified : a.module.written;
      if (a.kind == AttributeKind::ModuleList || a.kind == AttributeKind::ModuleDict) {
        std::string elem = a.module.local ? std::string(a.module.local->node->name) : a.module.qualified;
        what = a.container;
        what = elem.empty() ? what : what + " of " + elem;
        if (!a.count.text.empty()) what += " × " + a.count.display();
      }
      std::string sizes = sizes_text(a.sizes);
      if (a.kind == AttributeKind::Submodule && a.module.local) {
        std::string args;
        for (const auto& [k, v] : a.module.bindings) {
          if (v.is_config()) continue;
          args += (args.empty() ? "" : ", ") + k + "=" + v.display();
        }
        sizes = args.empty() ? sizes : "(" + args + ")";
      }
      std::string cond = a.condition;
      if (!a.element_condition.empty()) cond += (cond.empty() ? "" : "; ") + std::string("element: ") + a.element_condition;
      if (!a.note.empty()) sizes += (sizes.empty() ? "" : "; ") + a.note;
      out += fmt::format("| `{}` | {}{} | {} | {} | {} | {} |\n", a.name, attribute_kind_name(a.kind), a.inherited ? " (base)" : "",
                         escape_cell(what), escape_cell(sizes), escape_cell(cond), a.where.str());
    }
    out += "\n";
  }

  out += fmt::format("## {}\n\n{}\n", w.facts, w.fact_header);
  for (const Fact& f : inv.facts) {
    std::string value = f.known ? escape_cell(python_repr(f.value)) : (lang == Lang::Zh ? "未知" : "unknown");
    out += fmt::format("| {} | {} | {} |\n", f.name, value, escape_cell(f.source));
  }
  out += "\n";

  if (!inv.config_fields.empty()) {
    out += fmt::format("## {}\n\n{}\n", w.config_fields, w.config_header);
    for (const ConfigFieldUse& u : inv.config_fields) {
      std::string at;
      for (const SourceSpan& s2 : u.where) at += (at.empty() ? "" : ", ") + s2.str();
      std::string found = inv.config_path.empty() ? "—" : (u.found ? w.yes : w.no);
      out += fmt::format("| {} | {} | {} |\n", u.key, found, at);
    }
    out += "\n";
  }

  render_branches(inv.branches, lang, out);
  render_cache(inv.kv_cache, lang, out);
  render_chains(inv.chains, lang, out);

  out += fmt::format("## {}\n\n{}\n\n", w.not_computed, w.not_computed_intro);
  for (const auto& [name, meaning] : pending_inventory_parts()) out += "- " + name + ": " + meaning + "\n";
  return out;
}

}  // namespace npufuse::model
