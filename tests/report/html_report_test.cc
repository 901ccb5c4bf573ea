// The HTML report's structure: sections in workflow order, one card per
// candidate with its status, checks and snippet, pictures linked to cards,
// both languages, nothing fetched from outside, and user text escaped.
#include <gtest/gtest.h>

#include <regex>

#include "report/html_escape.h"
#include "report/html_report.h"
#include "report/plan_names.h"
#include "report/svg_dot.h"
#include "report/svg_picture.h"
#include "sample_plan.h"

namespace npufuse::report {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + needle.size())) ++n;
  return n;
}

size_t pos(const std::string& text, const std::string& needle) {
  size_t p = text.find(needle);
  EXPECT_NE(p, std::string::npos) << "missing: " << needle;
  return p;
}

// A block whose second and third ops belong to the plan's first candidate.
BlockPicture sample_block() {
  BlockPicture b;
  b.class_name = "DecoderLayer";
  b.role = "decoder_layer";
  b.file = "models/m/model.py";
  b.line = 30;
  b.graph.nodes = {{"input hidden_states", "models/m/model.py:31", -1},
                   {"pow", "models/m/model.py:12", 0},
                   {"rsqrt", "models/m/model.py:13", 0},
                   {"linear", "models/m/model.py:35", -1}};
  b.graph.edges = {{0, 1}, {1, 2}, {2, 3}};
  return b;
}

std::string sample_source() {
  std::string text;
  for (int i = 1; i <= 100; ++i) text += "line_" + std::to_string(i) + " = x\n";
  return text;
}

std::string render(const plan::Plan& plan, Lang lang = Lang::En) {
  SourceTexts texts;
  texts.add("models/m/model.py", sample_source());
  HtmlInputs in;
  in.plan = &plan;
  in.blocks = {sample_block()};
  in.sources = &texts;
  in.lang = lang;
  in.layout = PictureLayout::Builtin;
  return plan_to_html(in);
}

TEST(HtmlReport, SectionsFollowTheWorkflow) {
  std::string html = render(testing::sample_plan());
  size_t inputs = pos(html, "<section id=\"inputs\">");
  size_t facts = pos(html, "<section id=\"facts\">");
  size_t modules = pos(html, "<section id=\"modules\">");
  size_t coverage = pos(html, "<section id=\"coverage\">");
  size_t pictures = pos(html, "<section id=\"pictures\">");
  size_t candidates = pos(html, "<section id=\"candidates\">");
  size_t review = pos(html, "<section id=\"review\">");
  EXPECT_LT(inputs, facts);
  EXPECT_LT(facts, modules);
  EXPECT_LT(modules, coverage);
  EXPECT_LT(coverage, pictures);
  EXPECT_LT(pictures, candidates);
  EXPECT_LT(candidates, review);
}

TEST(HtmlReport, OneCardPerCandidateWithItsStatus) {
  plan::Plan plan = testing::sample_plan();
  std::string html = render(plan);
  EXPECT_EQ(count(html, "<article class=\"card "), plan.candidates.size());
  EXPECT_NE(html.find("data-count=\"" + std::to_string(plan.candidates.size()) + "\""), std::string::npos);
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const plan::Candidate& c = plan.candidates[i];
    std::string card = "id=\"c" + std::to_string(i) + "\" data-status=\"" + status_word(c.status) + "\" data-module=\"" +
                       c.module + "\"";
    EXPECT_NE(html.find(card), std::string::npos) << card;
    EXPECT_NE(html.find("data-id=\"" + escape_html(c.id) + "\""), std::string::npos) << c.id;
  }
  // Alternatives sit inside their card, not as cards of their own.
  EXPECT_NE(html.find("<details class=\"alternatives\">"), std::string::npos);
  EXPECT_NE(html.find("RoPE, half mode, per tensor"), std::string::npos);
}

TEST(HtmlReport, ChecksPrerequisitesAndReviewAreShown) {
  std::string html = render(testing::sample_plan());
  EXPECT_NE(html.find("<td class=\"ans-holds\">holds</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"ans-unknown\">unknown</td>"), std::string::npos);
  EXPECT_NE(html.find("npu_rms_norm.md#params"), std::string::npos);
  EXPECT_NE(html.find("data-review=\"decomposition_complete\" data-passed=\"true\""), std::string::npos);
  EXPECT_NE(html.find("data-review=\"constraints_confirmed\" data-passed=\"false\""), std::string::npos);
  EXPECT_NE(html.find("<input type=\"checkbox\" disabled checked> Modules decomposed"), std::string::npos);
}

TEST(HtmlReport, SnippetsMarkTheMatchedLines) {
  std::string html = render(testing::sample_plan());
  // The norm is at lines 12-18: 10 and 11 are context, 12 is matched.
  EXPECT_NE(html.find("<span class=\"line\"><span class=\"ln\">11</span>line_11 = x</span>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"line hit\"><span class=\"ln\">12</span>line_12 = x</span>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"line hit\"><span class=\"ln\">18</span>"), std::string::npos);
  EXPECT_EQ(html.find("<span class=\"ln\">9</span>"), std::string::npos);
}

TEST(HtmlReport, PictureNodesOfAChainLinkToTheirCard) {
  std::string html = render(testing::sample_plan());
  EXPECT_EQ(count(html, "<figure class=\"block\""), 1u);
  EXPECT_EQ(count(html, "<svg "), 1u);
  EXPECT_EQ(count(html, "<a href=\"#c0\"><g class=\"node chain st-candidate\""), 2u);
  EXPECT_EQ(count(html, "<g class=\"node\">"), 2u);
  // ... and the card names the picture it appears in.
  EXPECT_NE(html.find("<a href=\"#block-DecoderLayer\">DecoderLayer</a>"), std::string::npos);
}

TEST(HtmlReport, FiltersListTheStatusesAndModulesPresent) {
  plan::Plan plan = testing::sample_plan();
  std::string html = render(plan);
  for (const auto& c : plan.candidates) {
    EXPECT_NE(html.find("name=\"status\" value=\"" + std::string(status_word(c.status)) + "\""), std::string::npos);
    EXPECT_NE(html.find("<option value=\"" + c.module + "\">"), std::string::npos);
  }
  EXPECT_NE(html.find("id=\"f-stage\""), std::string::npos);
  EXPECT_NE(html.find("location.hash === '#selftest'"), std::string::npos);
}

TEST(HtmlReport, FetchesNothing) {
  std::string html = render(testing::sample_plan());
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url(http"), std::string::npos);
  EXPECT_EQ(html.find("fetch("), std::string::npos);
  EXPECT_EQ(html.find("XMLHttpRequest"), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
}

TEST(HtmlReport, ChineseWordsUnderLangZh) {
  std::string html = render(testing::sample_plan(), Lang::Zh);
  EXPECT_NE(html.find("<html lang=\"zh-CN\">"), std::string::npos);
  EXPECT_NE(html.find("第三步：候选清单"), std::string::npos);
  EXPECT_NE(html.find("x 为 float16 或 bfloat16"), std::string::npos);
  EXPECT_NE(html.find(">满足</td>"), std::string::npos);
}

TEST(HtmlReport, TextFromUserFilesIsEscaped) {
  plan::Plan plan = testing::sample_plan();
  const std::string evil = "<script>alert(\"x\")</script><img src=x onerror=alert(1)>";
  plan.candidates[0].title = evil;
  plan.candidates[0].evidence.push_back(evil);
  plan.candidates[0].id = "norm.rms_norm@\"><b>id";
  plan.files.push_back(evil);
  plan.notes.push_back(evil);
  plan.review[0].failing.push_back(evil);
  BlockPicture block = sample_block();
  block.class_name = evil;
  block.graph.nodes[1].label = evil;
  SourceTexts texts;
  texts.add("models/m/model.py", "x = 1\n" + evil + "\n" + std::string(20, '\n'));
  plan.candidates[0].location = {"models/m/model.py", 2, 2};
  HtmlInputs in;
  in.plan = &plan;
  in.blocks = {block};
  in.sources = &texts;
  in.layout = PictureLayout::Builtin;
  std::string html = plan_to_html(in);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("\"><b>id"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"), std::string::npos);
  // The page's own script is the only one.
  EXPECT_EQ(count(html, "<script>"), 1u);
}

TEST(HtmlEscape, EveryMarkupCharacter) {
  EXPECT_EQ(escape_html("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(escape_html("plain 中文"), "plain 中文");
}

TEST(SvgPicture, BuiltinDrawingHasAnArrowPerEdgeAndABoxPerNode) {
  BlockPicture b = sample_block();
  CandidateMarks marks{{"c0", "candidate", "RMSNorm"}};
  std::string svg = builtin_svg(b.graph, marks, "pic-x");
  EXPECT_EQ(count(svg, "<rect "), b.graph.nodes.size());
  EXPECT_EQ(count(svg, "marker-end=\"url(#pic-x-arrow)\""), b.graph.edges.size());
  EXPECT_NE(svg.find("<marker id=\"pic-x-arrow\""), std::string::npos);
}

TEST(SvgDot, SourceQuotesLabelsAndLinksChains) {
  PictureGraph g;
  g.nodes = {{"a\"b\\c", "f.py:1", -1}, {"pow", "f.py:2", 0}};
  g.edges = {{0, 1}};
  CandidateMarks marks{{"c0", "not_applicable", "t"}};
  std::string dot = dot_source(g, marks);
  EXPECT_NE(dot.find("n0 [label=\"a\\\"b\\\\c\""), std::string::npos);
  EXPECT_NE(dot.find("URL=\"#c0\""), std::string::npos);
  EXPECT_NE(dot.find("class=\"node chain st-not_applicable\""), std::string::npos);
  EXPECT_NE(dot.find("n0 -> n1;"), std::string::npos);
}

TEST(SvgDot, RunsDotWhenInstalled) {
  if (find_dot().empty()) GTEST_SKIP() << "graphviz dot is not on PATH";
  BlockPicture b = sample_block();
  CandidateMarks marks{{"c0", "candidate", "RMSNorm"}};
  std::optional<std::string> svg = dot_svg(b.graph, marks);
  ASSERT_TRUE(svg.has_value());
  EXPECT_NE(svg->find("<svg"), std::string::npos);
  EXPECT_NE(svg->find("#c0"), std::string::npos);
}

}  // namespace
}  // namespace npufuse::report
