// npufuse ops [--docs-path FILE] [--catalog DIR] [--json] [--lang en|zh]
//             show NAME | search KEYWORD [--max N] | list [--prefix P]
// The operator reference: the catalog merged with the docstrings of an
// installed torch_npu (read as text, never imported).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "catalog/catalog.h"
#include "catalog/docstrings.h"
#include "catalog/ops/ops_index.h"
#include "catalog/ops/render.h"
#include "catalog/torch_npu_discovery.h"
#include "cli/command.h"
#include "util/file_io.h"

namespace npufuse::cli {
namespace {

using namespace npufuse::catalog;

struct OpsOptions {
  std::string docs_path;
  std::string catalog_dir;
  bool json = false;
  std::string lang = "en";
  std::string name;
  std::string keyword;
  size_t max = 10;
  std::string prefix;
};

// The two texts of each message users see on stderr.
struct Say {
  bool zh;
  std::string operator()(std::string en, std::string zh_text) const { return zh ? zh_text : en; }
};

struct Loaded {
  Catalog catalog;
  std::optional<DocstringFile> docs;
  OpsProvenance from;
  bool fallback = false;  // no docstrings: the built-in catalog alone
};

Catalog load_catalog(const OpsOptions& o, OpsProvenance& from, const Say& say) {
  if (o.catalog_dir.empty()) {
    from.catalog = say(fmt::format("built-in catalog (npufuse {})", NPUFUSE_VERSION),
                       fmt::format("内置目录（npufuse {}）", NPUFUSE_VERSION));
    return Catalog::load(embedded_catalog_files(), "catalog");
  }
  auto files = directory_catalog_files(o.catalog_dir);
  bool has_facts = std::any_of(files.begin(), files.end(), [](const CatalogFile& f) { return f.path == "facts.toml"; });
  if (!has_facts)  // a directory of operator files only: use the built-in fact vocabulary
    for (auto& f : embedded_catalog_files())
      if (f.path == "facts.toml") files.push_back(f);
  from.catalog = say(fmt::format("catalog directory {}", o.catalog_dir), fmt::format("目录 {}", o.catalog_dir));
  Catalog c = Catalog::load(files, o.catalog_dir);
  for (const auto& w : c.warnings()) fmt::print(stderr, "npufuse ops: warning: {}\n", w);
  return c;
}

std::string docs_label(const std::string& path, const std::string& version, const Say& say) {
  if (version.empty())
    return say(fmt::format("docstrings of {} (torch_npu version unknown)", path),
               fmt::format("{} 中的docstring（torch_npu版本未知）", path));
  return say(fmt::format("docstrings of torch_npu {} ({})", version, path),
             fmt::format("torch_npu {} 的docstring（{}）", version, path));
}

void report_skipped(const DocstringFile& docs) {
  for (const auto& s : docs.skipped) fmt::print(stderr, "npufuse ops: warning: {}\n", s);
}

Loaded load_sources(const OpsOptions& o, const Say& say) {
  Loaded l;
  l.catalog = load_catalog(o, l.from, say);
  if (!o.docs_path.empty()) {
    l.docs = read_docstring_file(o.docs_path);  // errors here are usage errors (exit 2)
    l.from.docstrings = docs_label(o.docs_path, torch_npu_version_near(o.docs_path), say);
    report_skipped(*l.docs);
    return l;
  }
  std::vector<std::string> asked;
  if (auto install = discover_torch_npu(&asked)) {
    try {
      l.docs = read_docstring_file(install->docs_path);
      l.from.docstrings = docs_label(install->docs_path, install->version, say);
      report_skipped(*l.docs);
      return l;
    } catch (const DocstringError& e) {
      fmt::print(stderr, "npufuse ops: warning: {}\n", e.what());
    }
  }
  l.fallback = true;
  std::string who;
  for (const auto& a : asked) who += (who.empty() ? "" : ", ") + a;
  if (who.empty()) who = say("no Python interpreter", "没有可用的Python解释器");
  fmt::print(stderr, "{}\n",
             say(fmt::format("npufuse ops: no installed torch_npu found (asked {}); using the {} only ({} operators). "
                             "Pass --docs-path FILE to read a torch_npu _op_plugin_docs.py.",
                             who, l.from.catalog, l.catalog.operators().size()),
                 fmt::format("npufuse ops：未找到已安装的torch_npu（已询问 {}），仅使用{}（{}个算子）。"
                             "可用 --docs-path FILE 指定torch_npu的_op_plugin_docs.py。",
                             who, l.from.catalog, l.catalog.operators().size())));
  return l;
}

// A name from aliases.toml: say what it is and what to use instead. Exit 1:
// there is no torch_npu operator to show.
int run_show_alias(const OpsOptions& o, const Alias& a, Lang lang, const Say& say) {
  bool custom = a.kind == "custom_op";
  std::string what_en = custom ? "a custom op of the cann-recipes-infer ports" : "a renamed or misspelt operator name";
  std::string what_zh = custom ? "cann-recipes-infer移植代码中的自定义算子" : "改名或拼写不同的算子名";
  if (o.json) {
    nlohmann::ordered_json j{{"name", a.name}, {"found", false},
                             {"alias", {{"kind", a.kind}, {"use", a.use}, {"note", a.note.in(lang)}}}};
    fmt::print("{}\n", j.dump(2));
  }
  fmt::print(stderr, "{}\n",
             say(fmt::format("npufuse ops: '{}' is not a torch_npu operator: {}; the official counterpart is {} "
                             "(npufuse ops show {})",
                             a.name, what_en, a.use, a.use),
                 fmt::format("npufuse ops：'{}' 不是torch_npu算子，而是{}；官方对应算子为 {}（npufuse ops show {}）",
                             a.name, what_zh, a.use, a.use)));
  fmt::print(stderr, "  {}\n", a.note.in(lang));
  return kFindings;
}

int run_show(const OpsOptions& o, const OpsIndex& index, const Loaded& l, Lang lang, const Say& say) {
  if (const OpsEntry* e = index.find(o.name); e && e->alias_only()) return run_show_alias(o, *e->alias, lang, say);
  if (const OpsEntry* e = index.find(o.name)) {
    if (o.json) fmt::print("{}\n", show_json(*e, l.from, lang).dump(2));
    else fmt::print("{}", render_show_text(*e, l.from, lang));
    return kOk;
  }
  auto near = index.similar_names(o.name, 5);
  if (o.json) {
    nlohmann::ordered_json j{{"name", o.name}, {"found", false}, {"did_you_mean", near}};
    fmt::print("{}\n", j.dump(2));
  }
  fmt::print(stderr, "{}\n", say(fmt::format("npufuse ops: operator '{}' not found", o.name),
                                 fmt::format("npufuse ops：未找到算子 '{}'", o.name)));
  if (!near.empty()) {
    std::string list;
    for (const auto& n : near) list += (list.empty() ? "" : ", ") + n;
    fmt::print(stderr, "{}\n", say("  did you mean: " + list + "?", "  您是否要找：" + list + "？"));
  }
  if (l.fallback)
    fmt::print(stderr, "{}\n", say("  (only the built-in catalog was searched; it may be callable but undocumented there)",
                                   "  （仅检索了内置目录；该算子可能存在但未收录）"));
  return kFindings;
}

int run_search(const OpsOptions& o, const OpsIndex& index, Lang lang, const Say& say) {
  auto hits = index.search(o.keyword);
  if (o.json) fmt::print("{}\n", search_json(o.keyword, hits, o.max, lang).dump(2));
  if (hits.empty()) {
    fmt::print(stderr, "{}\n", say(fmt::format("npufuse ops: no operator matches '{}'", o.keyword),
                                   fmt::format("npufuse ops：没有与 '{}' 匹配的算子", o.keyword)));
    return kFindings;
  }
  if (!o.json) fmt::print("{}", render_search_text(hits, o.max, lang));
  if (hits.size() > o.max)
    fmt::print(stderr, "{}\n", say(fmt::format("showing {} of {} matches (--max {})", o.max, hits.size(), o.max),
                                   fmt::format("共{}个匹配，显示前{}个（--max {}）", hits.size(), o.max, o.max)));
  return kOk;
}

int run_list(const OpsOptions& o, const OpsIndex& index, const Loaded& l, const Say& say) {
  std::vector<const OpsEntry*> shown;
  for (const auto& e : index.entries())
    if (!e.alias_only() && e.name.compare(0, o.prefix.size(), o.prefix) == 0) shown.push_back(&e);
  if (o.json) fmt::print("{}\n", list_json(shown, l.from).dump(2));
  else
    for (const OpsEntry* e : shown) fmt::print("{}\n", e->name);
  if (shown.empty()) {
    fmt::print(stderr, "{}\n", say(fmt::format("npufuse ops: no operator name starts with '{}'", o.prefix),
                                   fmt::format("npufuse ops：没有以 '{}' 开头的算子", o.prefix)));
    return kFindings;
  }
  fmt::print(stderr, "{}\n", say(fmt::format("{} operators", shown.size()), fmt::format("共{}个算子", shown.size())));
  return kOk;
}

}  // namespace

Registered register_ops(CLI::App& parent) {
  static OpsOptions o;
  auto* cmd = parent.add_subcommand("ops", "torch_npu operator reference (catalog + installed docstrings)");
  cmd->require_subcommand(1);
  cmd->add_option("--docs-path", o.docs_path, "A torch_npu _op_plugin_docs.py to read (default: find an installed torch_npu)");
  cmd->add_option("--catalog", o.catalog_dir, "Catalog directory to use instead of the built-in catalog");
  cmd->add_flag("--json", o.json, "Print JSON");
  cmd->add_option("--lang", o.lang, "Language of texts and headings")->check(CLI::IsMember({"en", "zh"}));

  auto* show = cmd->add_subcommand("show", "Show one operator: signature, constraints, doc references");
  show->add_option("name", o.name, "Operator name, e.g. npu_rms_norm")->required();
  auto* search = cmd->add_subcommand("search", "Search names, summaries and texts (ranked)");
  search->add_option("keyword", o.keyword, "Keyword (English or Chinese)")->required();
  search->add_option("--max", o.max, "Most results to print (default 10)")->check(CLI::Range(1, 1000000));
  auto* list = cmd->add_subcommand("list", "List operator names");
  list->add_option("--prefix", o.prefix, "Only names starting with this prefix");
  for (auto* sub : {show, search, list}) sub->fallthrough();  // ops options may follow the subcommand

  return {cmd, [show, search] {
            Lang lang = o.lang == "zh" ? Lang::Zh : Lang::En;
            Say say{lang == Lang::Zh};
            Loaded l;
            try {
              l = load_sources(o, say);
            } catch (const CatalogError& e) {
              fmt::print(stderr, "npufuse ops: the catalog does not load:\n{}\n", e.what());
              return static_cast<int>(kUsage);
            } catch (const DocstringError& e) {
              fmt::print(stderr, "npufuse ops: error: {}\n", e.what());
              return static_cast<int>(kUsage);
            } catch (const FileError& e) {
              fmt::print(stderr, "npufuse ops: error: {}\n", e.what());
              return static_cast<int>(kUsage);
            }
            OpsIndex index(&l.catalog, l.docs ? &*l.docs : nullptr);
            if (show->parsed()) return run_show(o, index, l, lang, say);
            if (search->parsed()) return run_search(o, index, lang, say);
            return run_list(o, index, l, say);
          }};
}

}  // namespace npufuse::cli
