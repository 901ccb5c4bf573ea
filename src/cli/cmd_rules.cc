// npufuse rules [--rules DIR] [--json] [--lang en|zh]
//               list [--family F] [--module M] | show ID
// The fusion rules npufuse knows: the copy of rules/ embedded at build time,
// or a rules directory being written (--rules DIR), loaded strictly.
#include <fmt/format.h>

#include "cli/command.h"
#include "rules/rule_render.h"
#include "rules/ruleset.h"
#include "util/file_io.h"

namespace npufuse::cli {
namespace {

using namespace npufuse::rules;

struct RulesOptions {
  std::string rules_dir;
  bool json = false;
  std::string lang = "en";
  std::string family;
  std::string module;
  std::string id;
};

struct RulesSay {
  bool zh;
  std::string operator()(std::string en, std::string zh_text) const { return zh ? zh_text : en; }
};

std::string source_label(const RulesOptions& o) {
  return o.rules_dir.empty() ? fmt::format("built-in rules (npufuse {})", NPUFUSE_VERSION)
                             : fmt::format("rules directory {}", o.rules_dir);
}

RuleSet load_rules(const RulesOptions& o) {
  if (o.rules_dir.empty()) return RuleSet::load(embedded_rule_files(), "rules");
  return RuleSet::load(directory_rule_files(o.rules_dir), o.rules_dir);
}

int run_list(const RulesOptions& o, const RuleSet& set, const RulesSay& say) {
  std::vector<const Rule*> shown;
  for (const Rule& r : set.rules())
    if ((o.family.empty() || r.family == o.family) && (o.module.empty() || r.module == o.module)) shown.push_back(&r);
  RuleLang lang = say.zh ? RuleLang::Zh : RuleLang::En;
  if (o.json) fmt::print("{}\n", list_json(shown, source_label(o)).dump(2));
  else fmt::print("{}", render_list_text(shown, lang));
  if (shown.empty()) {
    fmt::print(stderr, "{}\n", say("npufuse rules: no rule matches the filters", "npufuse rules：没有符合条件的规则"));
    return kFindings;
  }
  fmt::print(stderr, "{}\n", say(fmt::format("{} rules", shown.size()), fmt::format("共{}条规则", shown.size())));
  return kOk;
}

int run_show(const RulesOptions& o, const RuleSet& set, const RulesSay& say) {
  if (const Rule* r = set.find(o.id)) {
    if (o.json) fmt::print("{}\n", show_json(*r, source_label(o)).dump(2));
    else fmt::print("{}", render_show_text(*r, say.zh ? RuleLang::Zh : RuleLang::En));
    return kOk;
  }
  auto near = similar_rule_ids(set.rules(), o.id, 5);
  fmt::print(stderr, "{}\n", say(fmt::format("npufuse rules: no rule '{}'", o.id),
                                 fmt::format("npufuse rules：没有规则 '{}'", o.id)));
  std::string list;
  for (const auto& n : near) list += (list.empty() ? "" : ", ") + n;
  if (!near.empty()) fmt::print(stderr, "{}\n", say("  did you mean: " + list + "?", "  您是否要找：" + list + "？"));
  fmt::print(stderr, "{}\n", say("  (npufuse rules list shows every rule id)", "  （npufuse rules list 列出全部规则）"));
  return kUsage;
}

}  // namespace

Registered register_rules(CLI::App& parent) {
  static RulesOptions o;
  auto* cmd = parent.add_subcommand("rules", "List and show the fusion rules");
  cmd->require_subcommand(1);
  cmd->add_option("--rules", o.rules_dir, "Rules directory to use instead of the built-in rules");
  cmd->add_flag("--json", o.json, "Print JSON");
  cmd->add_option("--lang", o.lang, "Language of labels and documentation")->check(CLI::IsMember({"en", "zh"}));

  auto* list = cmd->add_subcommand("list", "List the rules: id, module, safety, stages, apis, title");
  list->add_option("--family", o.family, "Only rules of this family (norm, rope, ffn, ...)");
  list->add_option("--module", o.module, "Only rules for this module kind (attention, norm, ...)");
  auto* show = cmd->add_subcommand("show", "Show one rule: metadata, checks, documentation, replacement");
  show->add_option("id", o.id, "Rule id, e.g. norm.rms_norm")->required();
  for (auto* sub : {list, show}) sub->fallthrough();  // rules options may follow the subcommand

  return {cmd, [list, show] {
            RulesSay say{o.lang == "zh"};
            try {
              RuleSet set = load_rules(o);
              if (list->parsed()) return run_list(o, set, say);
              if (show->parsed()) return run_show(o, set, say);
            } catch (const RuleError& e) {
              fmt::print(stderr, "{}\n{}\n", e.what(),
                         say("npufuse rules: the rules did not load (errors above)",
                             "npufuse rules：规则加载失败（见上方错误）"));
            } catch (const FileError& e) {
              fmt::print(stderr, "npufuse rules: {}\n", e.what());
            }
            return static_cast<int>(kUsage);
          }};
}

}  // namespace npufuse::cli
