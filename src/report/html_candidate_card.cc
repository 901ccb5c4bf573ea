#include "report/html_candidate_card.h"

#include <fmt/format.h>

#include "report/html_escape.h"
#include "report/html_words.h"
#include "report/module_names.h"
#include "report/plan_names.h"

namespace npufuse::report {
namespace {

using plan::Candidate;

std::string card_pick(const std::string& en, const std::string& zh, Lang lang) {
  return lang == Lang::Zh && !zh.empty() ? zh : en;
}

std::string card_code(const std::string& s) { return "<code>" + escape_html(s) + "</code>"; }

std::string list_html(const char* title, const std::vector<std::string>& items) {
  if (items.empty()) return "";
  std::string out = fmt::format("<p>{}:</p><ul>", escape_html(title));
  for (const auto& i : items) out += "<li>" + escape_html(i) + "</li>";
  return out + "</ul>\n";
}

std::string stages_text(const std::vector<std::string>& stages, Lang lang) {
  std::string out;
  for (const auto& s : stages) out += (out.empty() ? "" : ", ") + stage_label(s, lang);
  return out;
}

std::string meta_html(const Candidate& c, const CardContext& ctx) {
  const HtmlWords& w = html_words(ctx.lang);
  std::string out = "<dl class=\"meta\">";
  auto row = [&out](const char* name, const std::string& value_html) {
    out += fmt::format("<dt>{}</dt><dd>{}</dd>", escape_html(name), value_html);
  };
  row(w.id, card_code(c.id));
  if (!c.rule.empty()) row(w.rule, card_code(c.rule));
  row(w.where, card_code(location_label(c.location)));
  if (!c.extra_locations.empty()) {
    std::string more;
    for (const auto& l : c.extra_locations) more += (more.empty() ? "" : ", ") + card_code(location_label(l));
    row(w.more_places, more);
  }
  if (!c.instance.empty()) row(w.instance, card_code(c.instance));
  row(w.stages, escape_html(stages_text(c.stages, ctx.lang)));
  if (!c.apis.empty()) {
    std::string apis;
    for (const auto& a : c.apis) apis += (apis.empty() ? "" : ", ") + card_code(a);
    row(w.apis, apis);
  }
  if (c.confidence < 1.0) row(w.confidence, fmt::format("{:.2f}", c.confidence));
  if (!ctx.shown_in_blocks.empty()) {
    std::string blocks;
    for (const auto& b : ctx.shown_in_blocks)
      blocks += (blocks.empty() ? "" : ", ") + fmt::format("<a href=\"#block-{0}\">{0}</a>", escape_html(b));
    row(w.in_pictures, blocks);
  }
  return out + "</dl>\n";
}

std::string checks_html(const Candidate& c, Lang lang) {
  if (c.status == plan::Status::NoFusedOp) return "";
  const HtmlWords& w = html_words(lang);
  std::string out = fmt::format("<p>{}:</p>", escape_html(w.checks));
  if (c.checks.empty()) return out + fmt::format("<p>{}</p>\n", escape_html(w.no_checks));
  out += fmt::format("<table class=\"checks\"><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr>",
                     w.api, w.constraint, w.answer, w.severity, w.what_it_says, w.doc);
  for (const auto& ch : c.checks) {
    std::string what = escape_html(card_pick(ch.message_en, ch.message_zh, lang));
    if (!ch.evidence.empty()) {
      std::string ev;
      for (const auto& e : ch.evidence) ev += (ev.empty() ? "" : "; ") + e;
      what += " <small>(" + escape_html(ev) + ")</small>";
    }
    std::string constraint = card_code(ch.constraint_id);
    if (!ch.stage.empty()) constraint += " (" + escape_html(stage_label(ch.stage, lang)) + ")";
    out += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"ans-{}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                       card_code(ch.api), constraint, check::answer_name(ch.answer), escape_html(answer_label(ch.answer, lang)),
                       escape_html(ch.severity), what, escape_html(ch.doc));
  }
  out += "</table>\n";
  if (!c.missing_facts.empty()) {
    std::string facts;
    for (const auto& f : c.missing_facts) facts += (facts.empty() ? "" : ", ") + card_code(f);
    out += fmt::format("<p>{}: {}</p>\n", escape_html(w.missing_facts), facts);
  }
  return out;
}

std::string prerequisites_html(const Candidate& c, Lang lang) {
  if (c.prerequisites.empty()) return "";
  const HtmlWords& w = html_words(lang);
  std::string out = fmt::format("<p>{}:</p><ul>", escape_html(w.prerequisites));
  for (const auto& p : c.prerequisites) {
    std::string where = p.where.file.empty() ? "" : ", " + card_code(location_label(p.where));
    out += fmt::format("<li>{} ({}{}): {}</li>", card_code(p.id), escape_html(p.mechanical ? w.mechanical : w.manual), where,
                       escape_html(card_pick(p.en, p.zh, lang)));
  }
  return out + "</ul>\n";
}

// The chain's place and the other functions it runs through, one snippet each.
std::string snippets_html(const Candidate& c, const CardContext& ctx) {
  if (!ctx.sources || c.location.file.empty()) return "";
  std::vector<plan::Location> places{c.location};
  for (const auto& p : c.parts) {
    bool same = p.file == c.location.file && p.start_line == c.location.start_line && p.end_line == c.location.end_line;
    if (!same) places.push_back(p);
  }
  std::string out;
  for (const auto& place : places) {
    std::optional<std::string_view> text = ctx.sources->get(place.file);
    if (!text) {
      out += fmt::format("<p class=\"snippet missing\">{}: {}</p>\n", card_code(location_label(place)),
                         escape_html(html_words(ctx.lang).source_unavailable));
      continue;
    }
    out += snippet_html(*text, location_label(place), {LineRange{place.start_line, place.end_line}});
  }
  return out;
}

std::string body_html(const Candidate& c, const CardContext& ctx) {
  const HtmlWords& w = html_words(ctx.lang);
  std::string out = meta_html(c, ctx);
  out += snippets_html(c, ctx);
  out += list_html(w.evidence, c.evidence);
  out += checks_html(c, ctx.lang);
  out += prerequisites_html(c, ctx.lang);
  out += list_html(w.escapes, c.escapes);
  out += list_html(w.blocking, c.blocking);
  out += list_html(w.near_miss, c.near_miss_reasons);
  if (!c.verification_cut.empty())
    out += fmt::format("<p>{}: {}</p>\n", escape_html(w.cut), escape_html(c.verification_cut));
  return out;
}

std::string heading_html(const Candidate& c, const std::string& number, Lang lang, const char* suffix) {
  std::string status = status_word(c.status);
  return fmt::format("<h4><span class=\"num\">{}.</span> {}{} <span class=\"badge st-{}\">{}</span></h4>\n",
                     escape_html(number), escape_html(c.title.empty() ? c.id : c.title), suffix, status,
                     escape_html(status_label(c.status, lang)));
}

}  // namespace

std::string candidate_anchor(size_t index) { return fmt::format("c{}", index); }

std::string location_label(const plan::Location& l) {
  if (l.file.empty()) return "";
  if (l.end_line > l.start_line) return fmt::format("{}:{}-{}", l.file, l.start_line, l.end_line);
  return fmt::format("{}:{}", l.file, l.start_line);
}

std::string candidate_card_html(const Candidate& c, const std::string& anchor, int number, const CardContext& ctx) {
  const HtmlWords& w = html_words(ctx.lang);
  std::string stages;
  for (const auto& s : c.stages) stages += (stages.empty() ? "" : " ") + s;
  std::string out = fmt::format(
      "<article class=\"card st-{0}\" id=\"{1}\" data-status=\"{0}\" data-module=\"{2}\" data-stages=\"{3}\" "
      "data-id=\"{4}\">\n",
      status_word(c.status), escape_html(anchor), escape_html(c.module), escape_html(stages), escape_html(c.id));
  out += heading_html(c, std::to_string(number), ctx.lang, "");
  out += body_html(c, ctx);
  if (!c.alternatives.empty()) {
    out += fmt::format("<details class=\"alternatives\"><summary>{} ({})</summary>\n", escape_html(w.alternatives),
                       c.alternatives.size());
    char letter = 'a';
    CardContext inner = ctx;
    inner.shown_in_blocks.clear();
    for (const Candidate& a : c.alternatives) {
      out += fmt::format("<section class=\"card alt st-{}\">\n", status_word(a.status));
      std::string suffix = fmt::format(" <small>({})</small>", escape_html(w.alternative));
      out += heading_html(a, std::to_string(number) + letter++, ctx.lang, suffix.c_str());
      out += body_html(a, inner);
      out += "</section>\n";
    }
    out += "</details>\n";
  }
  return out + "</article>\n";
}

}  // namespace npufuse::report
