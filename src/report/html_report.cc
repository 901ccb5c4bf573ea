#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "model/model_config.h"
#include "model/source_set.h"
#include "report/chain_markdown.h"
#include "report/html_assets.h"
#include "report/html_candidate_card.h"
#include "report/html_escape.h"
#include "report/html_words.h"
#include "report/module_names.h"
#include "report/plan_names.h"
#include "report/svg_dot.h"
#include "report/svg_picture.h"

namespace npufuse::report {
namespace {

using plan::Candidate;
using plan::Plan;
using plan::Status;

constexpr size_t kMostNodesDrawn = 800;

std::string code(const std::string& s) { return "<code>" + escape_html(s) + "</code>"; }

std::string pick(const std::string& en, const std::string& zh, Lang lang) {
  return lang == Lang::Zh && !zh.empty() ? zh : en;
}

// Candidate indices grouped by module, modules in workflow order.
std::vector<std::pair<std::string, std::vector<size_t>>> by_module(const Plan& plan) {
  std::map<std::pair<int, std::string>, std::vector<size_t>> groups;
  for (size_t i = 0; i < plan.candidates.size(); ++i)
    groups[{module_rank(plan.candidates[i].module), plan.candidates[i].module}].push_back(i);
  std::vector<std::pair<std::string, std::vector<size_t>>> out;
  for (auto& [key, list] : groups) out.emplace_back(key.second, std::move(list));
  return out;
}

class Page {
 public:
  explicit Page(const HtmlInputs& in) : in_(in), plan_(*in.plan), lang_(in.lang), w_(html_words(in.lang)) {
    for (size_t i = 0; i < plan_.candidates.size(); ++i) {
      const Candidate& c = plan_.candidates[i];
      marks_.push_back(CandidateMark{candidate_anchor(i), status_word(c.status), c.title.empty() ? c.id : c.title});
    }
    for (const BlockPicture& b : in_.blocks) {
      std::set<int> seen;
      for (const PictureNode& n : b.graph.nodes)
        if (n.candidate >= 0 && seen.insert(n.candidate).second) blocks_of_[n.candidate].push_back(b.class_name);
    }
  }

  std::string render() {
    out_ += fmt::format("<!DOCTYPE html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n", w_.html_lang);
    out_ += fmt::format("<title>{} — npufuse</title>\n", escape_html(title()));
    out_ += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    // Nothing on the page may load from elsewhere; the policy makes that a promise.
    out_ += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src data:\">\n";
    out_ += fmt::format("<style>{}</style>\n</head>\n<body>\n", html_style());
    nav();
    out_ += "<main>\n";
    out_ += fmt::format("<h1>{}</h1>\n<p>{}</p>\n", escape_html(title()),
                        escape_html(fmt::format(fmt::runtime(w_.tool_line),
                                                plan_.tool_version.empty() ? "?" : plan_.tool_version,
                                                plan_.schema_version)));
    inputs();
    facts();
    step1();
    step2();
    pictures();
    step3();
    requirements();
    step4();
    notes();
    out_ += "<pre id=\"selftest-result\"></pre>\n</main>\n";
    out_ += fmt::format("<script>{}</script>\n</body>\n</html>\n", html_script());
    return std::move(out_);
  }

 private:
  std::string title() const {
    std::string t = w_.title;
    if (!plan_.files.empty()) t += ": " + plan_.files.front();
    return t;
  }
  void section(const char* id, const char* heading) {
    out_ += fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n", id, escape_html(heading));
  }
  void end_section() { out_ += "</section>\n"; }

  void nav() {
    out_ += fmt::format("<nav><strong>{}</strong>\n", escape_html(w_.contents));
    const std::pair<const char*, const char*> items[] = {
        {"inputs", w_.inputs}, {"facts", w_.facts},   {"modules", w_.step1},           {"coverage", w_.step2},
        {"pictures", w_.pictures}, {"candidates", w_.step3}, {"requirements", w_.requirements}, {"review", w_.step4}};
    for (auto [id, text] : items) out_ += fmt::format("<a href=\"#{}\">{}</a>\n", id, escape_html(text));
    if (!plan_.notes.empty()) out_ += fmt::format("<a href=\"#notes\">{}</a>\n", escape_html(w_.notes));
    out_ += "</nav>\n";
  }

  void inputs() {
    section("inputs", w_.inputs);
    out_ += fmt::format("<table><tr><th>{}</th><th>sha256</th></tr>", w_.file);
    for (const auto& f : plan_.files) {
      auto it = plan_.file_hashes.find(f);
      out_ += fmt::format("<tr><td>{}</td><td>{}</td></tr>", code(f),
                          it == plan_.file_hashes.end() ? "–" : code(it->second.substr(0, 16) + "…"));
    }
    out_ += "</table>\n";
    const auto& o = plan_.options;
    auto or_unknown = [this](const std::string& s) { return escape_html(s.empty() ? w_.unknown : s); };
    auto count = [](int n) { return n > 0 ? std::to_string(n) : std::string("–"); };
    out_ += fmt::format("<table><tr><th>{}</th><th>{}</th></tr>", w_.setting, w_.value);
    auto row = [this](const char* k, const std::string& v_html) {
      out_ += fmt::format("<tr><td>{}</td><td>{}</td></tr>", escape_html(k), v_html);
    };
    row(w_.config, o.config.empty() ? escape_html(w_.none_given) : code(o.config));
    row(w_.chip, or_unknown(o.chip));
    row(w_.parallel, fmt::format("{} / {} / {}", count(o.tp), count(o.ep), count(o.dp)));
    row(w_.quant, or_unknown(o.quant));
    row(w_.stage, escape_html(stage_label(o.stage, lang_)));
    row(w_.torch_npu, or_unknown(o.torch_npu_version));
    row(w_.rules, o.rules_dir.empty() ? escape_html(w_.embedded) : code(o.rules_dir));
    row(w_.catalog, o.catalog_dir.empty() ? escape_html(w_.embedded) : code(o.catalog_dir));
    out_ += "</table>\n";
    end_section();
  }

  void facts() {
    section("facts", w_.facts);
    out_ += fmt::format("<h3>{}</h3>\n", escape_html(w_.facts_known));
    if (plan_.facts.all().empty()) {
      out_ += fmt::format("<p>{}</p>\n", escape_html(w_.facts_none));
    } else {
      out_ += fmt::format("<table><tr><th>{}</th><th>{}</th><th>{}</th></tr>", w_.fact, w_.value, w_.source);
      for (const auto& [name, fact] : plan_.facts.all())
        out_ += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>", code(name), code(fact.value.repr()),
                            escape_html(fact.provenance));
      out_ += "</table>\n";
    }
    out_ += fmt::format("<h3>{}</h3>\n", escape_html(w_.facts_asked));
    if (plan_.unknown_facts.empty()) {
      out_ += fmt::format("<p>{}</p>\n", escape_html(w_.facts_asked_none));
    } else {
      out_ += "<ul>";
      for (const auto& fact : plan_.unknown_facts) {
        std::string askers;
        for (size_t i = 0; i < plan_.candidates.size(); ++i) {
          const auto& mf = plan_.candidates[i].missing_facts;
          if (std::find(mf.begin(), mf.end(), fact) != mf.end())
            askers += (askers.empty() ? "" : ", ") +
                      fmt::format("<a href=\"#{}\">{}</a>", candidate_anchor(i), escape_html(plan_.candidates[i].id));
        }
        out_ += fmt::format("<li>{}{}</li>", code(fact), askers.empty() ? "" : " — " + escape_html(w_.needed_by) + ": " + askers);
      }
      out_ += "</ul>\n";
    }
    end_section();
  }

  void step1() {
    section("modules", w_.step1);
    auto groups = by_module(plan_);
    if (groups.empty()) {
      out_ += fmt::format("<p>{}</p>\n", escape_html(w_.no_candidates));
      end_section();
      return;
    }
    out_ += fmt::format("<table><tr><th>{}</th><th>{}</th>", w_.module, w_.chains);
    for (Status s : {Status::Candidate, Status::CandidateWithPrerequisites, Status::NotApplicable, Status::NoFusedOp})
      out_ += fmt::format("<th>{}</th>", escape_html(status_label(s, lang_)));
    out_ += fmt::format("<th>{}</th></tr>", w_.stages);
    for (const auto& [module, list] : groups) {
      int counts[4] = {0, 0, 0, 0};
      std::vector<std::string> stages;
      for (size_t i : list) {
        const Candidate& c = plan_.candidates[i];
        ++counts[static_cast<int>(c.status)];
        for (const auto& s : c.stages)
          if (std::find(stages.begin(), stages.end(), s) == stages.end()) stages.push_back(s);
      }
      std::stable_sort(stages.begin(), stages.end(),
                       [](const std::string& a, const std::string& b) { return a == "prefill" && b != "prefill"; });
      std::string stage_text;
      for (const auto& s : stages) stage_text += (stage_text.empty() ? "" : ", ") + stage_label(s, lang_);
      out_ += fmt::format("<tr><td>{}</td><td>{}</td>", escape_html(module_title(module, lang_)), list.size());
      for (int n : counts) out_ += fmt::format("<td>{}</td>", n > 0 ? std::to_string(n) : "–");
      out_ += fmt::format("<td>{}</td></tr>", escape_html(stage_text));
    }
    out_ += "</table>\n";
    end_section();
  }

  void step2() {
    section("coverage", w_.step2);
    reference_chains();
    for (const auto& [module, list] : by_module(plan_)) {
      std::map<std::string, int> covering;
      std::vector<std::string> open, blocked;
      for (size_t i : list) {
        const Candidate& c = plan_.candidates[i];
        int places = 1 + static_cast<int>(c.extra_locations.size());
        if (c.status == Status::Candidate || c.status == Status::CandidateWithPrerequisites)
          for (const auto& api : c.apis) covering[api] += places;
        if (c.status == Status::NoFusedOp)
          open.push_back(c.requirement.subgraph.empty() ? c.title : c.requirement.subgraph);
        if (c.status == Status::NotApplicable) blocked.push_back(c.title);
      }
      out_ += fmt::format("<h3>{}</h3><ul>", escape_html(module_title(module, lang_)));
      if (!covering.empty()) {
        std::string apis;
        for (const auto& [api, n] : covering) apis += (apis.empty() ? "" : ", ") + code(api) + fmt::format(" ({})", n);
        out_ += fmt::format("<li>{}: {}</li>", escape_html(w_.covered_by), apis);
      }
      auto joined = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : "; ") + escape_html(x);
        return s;
      };
      if (!open.empty()) out_ += fmt::format("<li>{}: {}</li>", escape_html(w_.left_open), joined(open));
      if (!blocked.empty()) out_ += fmt::format("<li>{}: {}</li>", escape_html(w_.blocked), joined(blocked));
      out_ += "</ul>\n";
    }
    end_section();
  }

  // The anchor of the card that holds candidate `id` (itself or as an alternative), or "".
  std::string card_of(const std::string& id) const {
    for (size_t i = 0; i < plan_.candidates.size(); ++i) {
      const Candidate& c = plan_.candidates[i];
      if (c.id == id) return candidate_anchor(i);
      for (const Candidate& a : c.alternatives)
        if (a.id == id) return candidate_anchor(i);
    }
    return "";
  }

  void reference_chains() {
    if (plan_.reference_chains.empty()) return;
    out_ += fmt::format("<h3>{}</h3>\n<p>{}</p>\n", escape_html(reference_chains_heading(lang_)),
                        escape_html(reference_chains_intro(lang_)));
    for (const plan::ChainReport& c : plan_.reference_chains) {
      out_ += fmt::format("<div class=\"chain\" data-chain=\"{}\" data-stage=\"{}\">\n<p>{} ({}) — {}</p>\n<ul>",
                          escape_html(c.id), escape_html(c.stage), code(c.id), escape_html(stage_label(c.stage, lang_)),
                          escape_html(pick(c.title_en, c.title_zh, lang_)));
      for (const plan::ChainStepReport& s : c.steps) {
        std::string links;
        for (const std::string& id : s.candidates) {
          std::string anchor = card_of(id);
          std::string shown = code(id);
          links += (links.empty() ? " " : ", ") +
                   (anchor.empty() ? shown : fmt::format("<a href=\"#{}\">{}</a>", escape_html(anchor), shown));
        }
        std::string detail = pick(s.detail, s.detail_zh, lang_);
        out_ += fmt::format("<li class=\"chain-step\" data-status=\"{}\"><strong>{}</strong> ({}): {}{}{}</li>",
                            escape_html(s.status), escape_html(s.name), escape_html(pick(s.title_en, s.title_zh, lang_)),
                            escape_html(chain_status_label(s.status, lang_)), links,
                            detail.empty() ? "" : " — " + escape_html(detail));
      }
      out_ += "</ul>\n</div>\n";
    }
  }

  void legend() {
    out_ += "<p class=\"legend\">";
    for (Status s : {Status::Candidate, Status::CandidateWithPrerequisites, Status::NotApplicable, Status::NoFusedOp})
      out_ += fmt::format("<span><i class=\"badge st-{}\"></i>{}</span>", status_word(s), escape_html(status_label(s, lang_)));
    out_ += fmt::format("<span><i style=\"background:#f2f2f2;border:1px solid #bbb\"></i>{}</span></p>\n",
                        escape_html(w_.legend_plain));
  }

  void pictures() {
    section("pictures", w_.pictures);
    if (in_.blocks.empty()) {
      out_ += fmt::format("<p>{}</p>\n", escape_html(w_.no_pictures));
      end_section();
      return;
    }
    out_ += fmt::format("<p>{}</p>\n", escape_html(w_.pictures_intro));
    legend();
    for (const BlockPicture& b : in_.blocks) {
      std::string picture;
      const char* how = w_.layout_builtin;
      if (b.graph.nodes.size() > kMostNodesDrawn) {
        picture = fmt::format("<p>{} ({})</p>", escape_html(w_.too_large), b.graph.nodes.size());
        how = "";
      } else {
        std::optional<std::string> by_dot;
        if (in_.layout == PictureLayout::Auto) by_dot = dot_svg(b.graph, marks_);
        if (by_dot) {
          picture = *by_dot;
          how = w_.layout_dot;
        } else {
          picture = builtin_svg(b.graph, marks_, "pic-" + b.class_name);
        }
      }
      out_ += fmt::format(
          "<figure class=\"block\" id=\"block-{0}\" data-role=\"{1}\"><figcaption>{0} <small>({1}, {2}:{3}; {4} ops; "
          "{5})</small></figcaption>\n{6}</figure>\n",
          escape_html(b.class_name), escape_html(b.role), escape_html(b.file), b.line, b.graph.nodes.size(),
          escape_html(how), picture);
    }
    end_section();
  }

  void filters() {
    out_ += fmt::format("<div id=\"filters\"><strong>{}</strong><span>{}:", escape_html(w_.filters), escape_html(w_.status));
    std::set<Status> present;
    for (const auto& c : plan_.candidates) present.insert(c.status);
    for (Status s : present)
      out_ += fmt::format(" <label><input type=\"checkbox\" name=\"status\" value=\"{0}\" checked> {1}</label>",
                          status_word(s), escape_html(status_label(s, lang_)));
    out_ += fmt::format("</span><label>{}: <select id=\"f-stage\"><option value=\"all\">{}</option>", escape_html(w_.stage),
                        escape_html(w_.all));
    for (const char* s : {"prefill", "decode"})
      out_ += fmt::format("<option value=\"{}\">{}</option>", s, escape_html(stage_label(s, lang_)));
    out_ += fmt::format("</select></label><label>{}: <select id=\"f-module\"><option value=\"all\">{}</option>",
                        escape_html(w_.module), escape_html(w_.all));
    for (const auto& [module, list] : by_module(plan_))
      out_ += fmt::format("<option value=\"{}\">{}</option>", escape_html(module), escape_html(module_title(module, lang_)));
    out_ += fmt::format("</select></label><span>{}: <output id=\"f-count\">{}</output> / {}</span></div>\n",
                        escape_html(w_.shown), plan_.candidates.size(), plan_.candidates.size());
  }

  void step3() {
    section("candidates", w_.step3);
    filters();
    out_ += fmt::format("<div id=\"cards\" data-count=\"{}\">\n", plan_.candidates.size());
    int number = 0;
    for (const auto& [module, list] : by_module(plan_)) {
      out_ += fmt::format("<h3 class=\"module\" data-module=\"{}\">{}</h3>\n", escape_html(module),
                          escape_html(module_title(module, lang_)));
      for (size_t i : list) {
        CardContext ctx;
        ctx.lang = lang_;
        ctx.sources = in_.sources;
        if (auto it = blocks_of_.find(static_cast<int>(i)); it != blocks_of_.end()) ctx.shown_in_blocks = it->second;
        out_ += candidate_card_html(plan_.candidates[i], candidate_anchor(i), ++number, ctx);
      }
    }
    out_ += "</div>\n";
    end_section();
  }

  void requirements() {
    section("requirements", w_.requirements);
    bool any = false;
    out_ += "<ul>";
    for (size_t i = 0; i < plan_.candidates.size(); ++i) {
      const Candidate& c = plan_.candidates[i];
      if (c.status != Status::NoFusedOp) continue;
      any = true;
      const auto& r = c.requirement;
      out_ += fmt::format("<li><a href=\"#{}\">{}</a> {}<ul>", candidate_anchor(i), escape_html(module_title(c.module, lang_)),
                          code(location_label(c.location)));
      auto field = [this](const char* name, const std::string& value) {
        if (!value.empty()) out_ += fmt::format("<li>{}: {}</li>", escape_html(name), escape_html(value));
      };
      auto joined = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
        return s;
      };
      field(w_.subgraph, r.subgraph);
      field(w_.inputs_word, joined(r.inputs));
      field(w_.outputs_word, joined(r.outputs));
      field("dtype", r.dtype);
      field("layout", r.layout);
      field(w_.why_nothing_fits, r.why_nothing_fits);
      out_ += "</ul></li>";
    }
    out_ += "</ul>\n";
    if (!any) out_ += fmt::format("<p>{}</p>\n", escape_html(w_.requirements_none));
    end_section();
  }

  void step4() {
    section("review", w_.step4);
    out_ += fmt::format("<p>{}</p>\n<ul class=\"review\">", escape_html(w_.step4_intro));
    for (const auto& r : plan_.review) {
      out_ += fmt::format("<li data-review=\"{}\" data-passed=\"{}\"><label><input type=\"checkbox\" disabled{}> {}</label>",
                          escape_html(r.id), r.passed ? "true" : "false", r.passed ? " checked" : "",
                          escape_html(pick(r.title_en.empty() ? r.id : r.title_en, r.title_zh, lang_)));
      if (!r.failing.empty()) {
        out_ += "<ul>";
        for (const auto& f : r.failing) out_ += "<li>" + escape_html(f) + "</li>";
        out_ += "</ul>";
      }
      out_ += "</li>";
    }
    out_ += "</ul>\n";
    end_section();
  }

  void notes() {
    if (plan_.notes.empty()) return;
    section("notes", w_.notes);
    out_ += "<ul>";
    for (const auto& n : plan_.notes) out_ += "<li>" + escape_html(n) + "</li>";
    out_ += "</ul>\n";
    end_section();
  }

  const HtmlInputs& in_;
  const Plan& plan_;
  Lang lang_;
  const HtmlWords& w_;
  CandidateMarks marks_;
  std::map<int, std::vector<std::string>> blocks_of_;
  std::string out_;
};

}  // namespace

std::string plan_to_html(const HtmlInputs& in) { return Page(in).render(); }

std::string render_html_report(const plan::Plan& plan, Lang lang) {
  model::SourceSet sources = model::SourceSet::load(plan.options.paths);
  model::ModelConfig config;
  if (!plan.options.config.empty()) config = model::ModelConfig::load(plan.options.config);
  SourceTexts texts;
  for (const auto& f : sources.files()) texts.add(f->path, std::string(f->parsed->source.text()));
  HtmlInputs in;
  in.plan = &plan;
  in.blocks = block_pictures(sources, config, plan);
  in.sources = &texts;
  in.lang = lang;
  const char* layout = std::getenv("NPUFUSE_HTML_LAYOUT");
  if (layout && std::string(layout) == "builtin") in.layout = PictureLayout::Builtin;
  return plan_to_html(in);
}

}  // namespace npufuse::report
