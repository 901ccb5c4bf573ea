// The one-screen summary `npufuse analyze` prints at a terminal: every
// candidate on one line with its operator, status and id; the facts asked
// for under the flag that gives them; the blocked chains with their reason;
// the report files. tests/report/check_terminal_summary.py drives the real
// command through a pseudo-terminal.
#include "report/plan_summary.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "report/plan_names.h"
#include "sample_plan.h"

namespace npufuse::report {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The lines after `heading` up to the next blank line.
std::vector<std::string> section(const std::string& text, const std::string& heading) {
  std::vector<std::string> all = lines_of(text), out;
  bool in = false;
  for (const std::string& l : all) {
    if (in && l.empty()) break;
    if (in) out.push_back(l);
    if (l.rfind(heading, 0) == 0) in = true;
  }
  return out;
}

// The one line of `lines` holding `needle`; fails the test unless exactly one does.
std::string line_with(const std::vector<std::string>& lines, const std::string& needle) {
  std::string found;
  int n = 0;
  for (const std::string& l : lines)
    if (l.find(needle) != std::string::npos) {
      found = l;
      ++n;
    }
  EXPECT_EQ(n, 1) << "lines holding '" << needle << "'";
  return found;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Terminal columns as a reader counts them: CJK characters two, others one.
size_t columns(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    n += (len == 3 && c >= 0xE3) ? 2 : 1;  // U+3000 and up: CJK punctuation, ideographs, full-width forms
    i += len;
  }
  return n;
}

// The terminal column where `id` starts on its row.
size_t id_column(const std::vector<std::string>& rows, const std::string& id) {
  std::string row = line_with(rows, id);
  return columns(row.substr(0, row.find(id)));
}

TEST(PlanSummary, OneLinePerCandidateWithOperatorStatusAndId) {
  plan::Plan p = testing::sample_plan();
  std::string text = plan_summary(p, Lang::En, {});
  std::vector<std::string> rows = section(text, "Candidates");
  ASSERT_EQ(rows.size(), p.candidates.size()) << text;
  for (const plan::Candidate& c : p.candidates) {
    std::string row = line_with(rows, c.id);
    EXPECT_TRUE(has(row, status_word(c.status))) << row;
    EXPECT_TRUE(has(row, c.apis.empty() ? "—" : c.apis.front())) << row;
  }
  EXPECT_TRUE(has(line_with(rows, "norm.rms_norm@"), "Norm")) << text;
  // The alternative is counted on its preferred candidate, not listed.
  EXPECT_TRUE(has(line_with(rows, "rope.rotate_half@"), "(+1 alternative)"));
  EXPECT_FALSE(has(text, "rope.rotate_half_mul@"));
  // The ids start in one column, so the table reads as one.
  for (const plan::Candidate& c : p.candidates)
    EXPECT_EQ(id_column(rows, c.id), id_column(rows, p.candidates.front().id)) << text;
  EXPECT_TRUE(has(text, "4 candidates in models/m")) << text;
}

TEST(PlanSummary, ChainsOfSeveralOperatorsAreShortened) {
  plan::Plan p = testing::sample_plan();
  p.candidates[0].apis = {"npu_moe_init_routing_v2", "npu_grouped_matmul", "npu_swiglu", "npu_moe_finalize_routing"};
  EXPECT_TRUE(has(plan_summary(p, Lang::En, {}), "npu_moe_init_routing_v2 + 3 more"));
  EXPECT_TRUE(has(plan_summary(p, Lang::Zh, {}), "npu_moe_init_routing_v2 等 4 个算子"));
}

TEST(PlanSummary, AskedForFactsStandUnderTheFlagThatGivesThem) {
  plan::Plan p = testing::sample_plan();
  p.unknown_facts = {"batch_size", "chip", "ep", "local_expert_num", "num_heads", "torch_npu_version"};
  // A rule whose RULE["when"] cannot be decided waits on its facts, one of
  // them asked for by no check.
  p.rules_awaiting_facts = {{"moe.experts_distribute", {"ep"}}, {"quant.w8a8_linear", {"quant"}}};
  std::string text = plan_summary(p, Lang::En, {});
  std::vector<std::string> rows = section(text, "Facts still asked for");
  ASSERT_EQ(rows.size(), 6u) << text;
  std::string ep = line_with(rows, "--ep N");
  EXPECT_TRUE(has(ep, " ep, local_expert_num")) << ep;
  EXPECT_TRUE(has(ep, "1 matched rule(s) wait on it: moe.experts_distribute")) << ep;
  EXPECT_TRUE(has(line_with(rows, "--tp N"), "num_heads"));
  EXPECT_TRUE(has(line_with(rows, "--chip "), "chip"));
  EXPECT_TRUE(has(line_with(rows, "--torch-npu-version V"), "torch_npu_version"));
  std::string quant = line_with(rows, "--quant ");
  EXPECT_TRUE(has(quant, "quant.w8a8_linear")) << quant;
  // No flag gives batch_size: a line of the deployment file does.
  EXPECT_TRUE(has(line_with(rows, "--deploy FILE"), "batch_size = …"));

  p.unknown_facts.clear();
  p.rules_awaiting_facts.clear();
  EXPECT_TRUE(has(plan_summary(p, Lang::En, {}), "Facts still asked for: none"));
}

TEST(PlanSummary, BlockedChainsCarryTheirOneLineReason) {
  plan::Plan p = testing::sample_plan();
  plan::ChainReport chain;
  chain.title_en = "FFN, decode";
  chain.title_zh = "FFN decode";
  chain.stage = "decode";
  chain.steps.push_back({"activation", "SwiGLU", "SwiGLU激活", "blocked", {"ffn.swiglu@models/m/model.py:80"}, "", ""});
  p.reference_chains.push_back(chain);
  std::string en = plan_summary(p, Lang::En, {});
  std::vector<std::string> rows = section(en, "Blocked");
  ASSERT_EQ(rows.size(), 3u) << en;
  EXPECT_EQ(rows[0], "  ffn.swiglu@models/m/model.py:80");
  // The violated hard constraint, not the softer near-miss wording.
  EXPECT_EQ(rows[1], "      npu_swiglu: no clamp");
  EXPECT_EQ(rows[2], "      blocks FFN, decode (decode): SwiGLU");
  std::vector<std::string> zh = section(plan_summary(p, Lang::Zh, {}), "被阻断");
  ASSERT_EQ(zh.size(), 3u);
  EXPECT_EQ(zh[1], "      npu_swiglu: 不支持截断");
  EXPECT_EQ(zh[2], "      阻断 FFN decode（Decode）：SwiGLU激活");

  // Without a violated check, what the analysis cited; long reasons are cut to one line.
  p.candidates[2].checks.clear();
  p.candidates[2].blocking = {std::string(400, 'x') + "\nsecond line"};
  std::vector<std::string> cut = section(plan_summary(p, Lang::En, {}), "Blocked");
  ASSERT_GE(cut.size(), 2u);
  EXPECT_EQ(cut[1], "      " + std::string(149, 'x') + "…");
}

TEST(PlanSummary, SaysWhereTheFullReportsAre) {
  plan::Plan p = testing::sample_plan();
  std::vector<ReportFile> files = {{ReportFile::Kind::Markdown, "out/m.npufuse.md"},
                                   {ReportFile::Kind::Html, "out/m.npufuse.html"},
                                   {ReportFile::Kind::Json, "out/m.npufuse.json"}};
  std::string text = plan_summary(p, Lang::En, files);
  std::vector<std::string> rows = section(text, "Full report");
  ASSERT_EQ(rows.size(), 4u) << text;
  EXPECT_EQ(rows[0], "  Markdown   out/m.npufuse.md");
  EXPECT_EQ(rows[1], "  HTML       out/m.npufuse.html");
  EXPECT_EQ(rows[2], "  JSON plan  out/m.npufuse.json");
  EXPECT_TRUE(has(rows[3], "npufuse explain ID --plan out/m.npufuse.json")) << rows[3];
  EXPECT_TRUE(has(section(plan_summary(p, Lang::Zh, files), "完整报告")[2], "JSON 计划  out/m.npufuse.json"));
  // Nothing written: no section claims a file.
  EXPECT_FALSE(has(plan_summary(p, Lang::En, {}), "Full report"));
}

TEST(PlanSummary, ChineseUsesTheReportsWordsAndKeepsColumns) {
  plan::Plan p = testing::sample_plan();
  std::string text = plan_summary(p, Lang::Zh, {});
  EXPECT_TRUE(has(text, "npufuse analyze：models/m 中有 4 个候选")) << text;
  std::vector<std::string> rows = section(text, "候选（模块、融合算子、状态、ID）");
  ASSERT_EQ(rows.size(), 4u) << text;
  EXPECT_TRUE(has(line_with(rows, "rope.rotate_half@"), "候选（需前置改造）"));
  EXPECT_TRUE(has(line_with(rows, "ffn.swiglu@"), "不适配"));
  EXPECT_TRUE(has(line_with(rows, "ffn.clamped_swiglu@"), "无现成融合算子"));
  // Every id starts in the same terminal column, wide characters counted twice.
  for (const plan::Candidate& c : p.candidates)
    EXPECT_EQ(id_column(rows, c.id), id_column(rows, p.candidates.front().id)) << text;
}

TEST(PlanSummary, APlanWithoutCandidatesSaysSo) {
  plan::Plan p = testing::sample_plan();
  p.candidates.clear();
  std::string text = plan_summary(p, Lang::En, {});
  EXPECT_TRUE(has(text, "no fusion candidates in models/m")) << text;
  EXPECT_FALSE(has(text, "Candidates ("));
}

}  // namespace
}  // namespace npufuse::report
