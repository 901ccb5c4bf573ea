#include <fmt/format.h>

#include "catalog/docstrings.h"
#include "catalog/ops/docstring_agreement.h"
#include "catalog/ops/render.h"

namespace npufuse::catalog {
namespace {

struct Headings {
  const char* source;
  const char* signature;
  const char* parameters;
  const char* outputs;
  const char* products;
  const char* dtypes;
  const char* layouts;
  const char* description;
  const char* constraints;
  const char* when;
  const char* require;
  const char* doc_ref;
  const char* versions;
  const char* pitfalls;
  const char* related;
  const char* drift;
  const char* doc_page;
  const char* warnings;
  const char* docstring;
  const char* catalog_only;
  const char* docstring_only;
  const char* none;
};

constexpr Headings kEnglish = {
    "Source", "Signature", "Parameters", "Outputs", "Products", "Dtypes", "Layouts", "Description",
    "Constraints", "when", "require", "doc", "Versions", "Pitfalls", "Related", "Schema drift (doc vs op_plugin_functions.yaml)",
    "Doc page", "Warnings", "Installed docstring", "not in the installed docstrings",
    "docstring only: the catalog has no entry (no signature check, no constraints)", "-"};

constexpr Headings kChinese = {
    "来源", "接口原型", "参数", "输出", "支持的产品", "数据类型", "数据排布", "功能描述",
    "约束", "当", "要求", "文档", "版本", "注意事项", "相关算子", "Schema差异（文档 vs op_plugin_functions.yaml）",
    "文档页面", "警告", "已安装的docstring", "已安装的docstring中没有",
    "仅有docstring：目录中没有此算子（无签名校验，无约束）", "无"};

const Headings& headings(Lang lang) { return lang == Lang::Zh ? kChinese : kEnglish; }

std::string joined(const std::vector<std::string>& v, const char* none) {
  if (v.empty()) return none;
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Indents every line of `text` by `pad`.
std::string indented(const std::string& text, const std::string& pad) {
  std::string out = pad;
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '\n' && i + 1 < text.size()) out += pad;
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

std::string param_text(const Param& p) {
  std::string s = p.type.empty() ? p.name : p.type + " " + p.name;
  if (p.default_value) s += "=" + *p.default_value;
  return s;
}

std::string source_line(const OpsEntry& e, const OpsProvenance& from, const Headings& h) {
  std::vector<std::string> parts;
  if (e.op) parts.push_back(from.catalog);
  if (e.docstring && !from.docstrings.empty()) parts.push_back(from.docstrings);
  else if (!from.docstrings.empty() && e.op) parts.push_back(std::string("(") + h.catalog_only + ")");
  return joined(parts, h.none);
}

const char* tier_label_zh(MatchTier t) {
  switch (t) {
    case MatchTier::ExactName: return "名称";
    case MatchTier::NamePrefix: return "名称前缀";
    case MatchTier::NameSubstring: return "名称包含";
    case MatchTier::Summary: return "摘要";
    case MatchTier::Keyword: return "关键词";
    case MatchTier::Body: return "正文";
  }
  return "?";
}

}  // namespace

std::string render_signature(const Operator& op) {
  std::string out = "torch_npu." + op.name + "(";
  bool star = false;
  for (size_t i = 0; i < op.params.size(); ++i) {
    if (i) out += ", ";
    if (op.params[i].kw_only && !star) {
      out += "*, ";
      star = true;
    }
    out += param_text(op.params[i]);
  }
  out += ")";
  if (op.outputs.size() == 1) {
    out += " -> " + op.outputs[0].type;
  } else if (!op.outputs.empty()) {
    out += " -> (";
    for (size_t i = 0; i < op.outputs.size(); ++i) out += (i ? ", " : "") + op.outputs[i].type;
    out += ")";
  }
  return out;
}

std::string render_constraint_rule(const Constraint& c, Lang lang) {
  const Headings& h = headings(lang);
  if (c.when_text.empty()) return fmt::format("{} {}", h.require, c.require_text);
  return fmt::format("{} {}: {} {}", h.when, c.when_text, h.require, c.require_text);
}

std::string first_line(const std::string& text, size_t limit) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    size_t a = line.find_first_not_of(" \t\r");
    if (a != std::string::npos) {
      line = line.substr(a, line.find_last_not_of(" \t\r") - a + 1);
      if (line.size() <= limit) return line;
      size_t cut = limit;
      while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 boundary
      return line.substr(0, cut) + "...";
    }
    start = end + 1;
  }
  return "";
}

std::string render_show_text(const OpsEntry& e, const OpsProvenance& from, Lang lang) {
  const Headings& h = headings(lang);
  std::string out;
  auto section = [&](const char* title) { out += fmt::format("\n{}:\n", title); };

  if (!e.op) {
    out += e.name + "\n";
    out += fmt::format("{}: {}\n", h.source, source_line(e, from, h));
    out += fmt::format("({})\n", h.docstring_only);
    std::string prototype = docstring_prototype(e.docstring->text, e.name);
    if (!prototype.empty()) out += fmt::format("\n{}:\n  {}\n", h.signature, prototype);
    section(h.docstring);
    out += indented(e.docstring->text, "  ");
    return out;
  }

  const Operator& op = *e.op;
  out += fmt::format("{}  [{}]\n", op.name, op.status);
  out += indented(op.summary.in(lang), "  ");
  out += fmt::format("{}: {}\n", h.source, source_line(e, from, h));

  section(h.signature);
  out += "  " + render_signature(op) + "\n";

  if (!op.params.empty()) {
    section(h.parameters);
    bool star = false;
    for (const auto& p : op.params) {
      if (p.kw_only && !star) {
        out += "  *\n";
        star = true;
      }
      out += "  " + param_text(p) + "\n";
      if (!p.doc.in(lang).empty()) out += indented(p.doc.in(lang), "      ");
    }
  }
  if (!op.outputs.empty()) {
    section(h.outputs);
    for (const auto& o : op.outputs) {
      out += fmt::format("  {} {}\n", o.type, o.name);
      if (!o.doc.in(lang).empty()) out += indented(o.doc.in(lang), "      ");
    }
  }
  out += "\n";
  out += fmt::format("{}: {}\n", h.products, joined(op.products, h.none));
  out += fmt::format("{}: {}\n", h.dtypes, joined(op.dtypes, h.none));
  out += fmt::format("{}: {}\n", h.layouts, joined(op.layouts, h.none));

  if (!op.description.in(lang).empty()) {
    section(h.description);
    out += indented(op.description.in(lang), "  ");
  }
  if (!op.constraints.empty()) {
    section(h.constraints);
    for (const auto& c : op.constraints) {
      out += fmt::format("  [{}] {}: {}\n", check::severity_name(c.severity), c.id, render_constraint_rule(c, lang));
      out += indented(c.message.in(lang), "      ");
      out += fmt::format("      {}: {}\n", h.doc_ref, c.doc);
    }
  }
  if (!op.versions_torch_npu.empty() || !op.versions_cann.empty()) {
    section(h.versions);
    if (!op.versions_torch_npu.empty()) out += indented("torch_npu: " + op.versions_torch_npu, "  ");
    if (!op.versions_cann.empty()) out += indented("CANN: " + op.versions_cann, "  ");
  }
  if (!op.pitfalls.empty()) {
    section(h.pitfalls);
    for (const auto& p : op.pitfalls) {
      std::string text = "- " + p.text.in(lang);
      out += indented(text, "  ");
    }
  }
  if (!op.related.empty()) out += fmt::format("\n{}: {}\n", h.related, joined(op.related, h.none));
  if (!op.schema_drift.empty()) {
    section(h.drift);
    for (const auto& d : op.schema_drift) {
      std::string subject = d.param.empty() ? std::string(drift_kind_name(d.kind))
                                            : fmt::format("{} ({})", d.param, drift_kind_name(d.kind));
      out += indented("- " + subject + ": " + d.note, "  ");
    }
  }
  std::string page = op.doc.in(lang);
  if (!page.empty()) out += fmt::format("\n{}: {}\n", h.doc_page, page);

  if (e.docstring) {
    auto warnings = docstring_disagreements(op, *e.docstring, lang);
    if (!warnings.empty()) {
      section(h.warnings);
      for (const auto& w : warnings)
        out += fmt::format("  - {}{}\n", lang == Lang::Zh ? "已安装的docstring与目录不一致：" : "installed docstring and catalog disagree: ", w);
    }
  }
  return out;
}

std::string render_search_text(const std::vector<SearchHit>& hits, size_t max, Lang lang) {
  std::string out;
  for (size_t i = 0; i < hits.size() && i < max; ++i) {
    const OpsEntry& e = *hits[i].entry;
    bool zh = lang == Lang::Zh;
    std::string tag = e.op && e.docstring ? (zh ? "目录+docstring" : "catalog+docstring")
                                          : (e.op ? (zh ? "目录" : "catalog") : "docstring");
    if (e.alias_only()) tag = (zh ? "别名，请用 " : "alias; use ") + e.alias->use;
    out += fmt::format("{}. {}  [{}; {}]\n", i + 1, e.name, tag, zh ? tier_label_zh(hits[i].tier) : match_tier_name(hits[i].tier));
    std::string summary = e.op ? e.op->summary.in(lang)
                               : (e.docstring ? first_line(e.docstring->text, 150) : e.alias->note.in(lang));
    if (!summary.empty()) out += "   " + first_line(summary, 150) + "\n";
  }
  return out;
}

}  // namespace npufuse::catalog
