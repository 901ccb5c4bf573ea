// A chain whose statements straddle an `if` the loaded config decides is
// rewritten with that if folded to the arm the config takes: the arm's other
// statements stay (moved out, comments kept), the other arm goes, a comment
// and apply's summary say which arm ran; a chain in the arm the config does
// not run stays by hand.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <ranges>
#include <string>

#include "apply/patch_plan.h"
#include "apply_test_support.h"

namespace npufuse::apply {
namespace {

using testing::plan_for_model_copy;
using testing::ScratchDir;

std::string id_with(const PatchSet& set, const std::string& rule) {
  for (const std::string& id : set.applied)
    if (id.rfind(rule + "@", 0) == 0) return id;
  return "";
}

std::vector<std::string> folds_of(const PatchSet& set, const std::string& id) {
  std::vector<std::string> out;
  for (const ManualStep& r : set.refactored)
    if (r.candidate == id) out.push_back(r.what);
  return out;
}

const std::string& patched_text(const PatchSet& set) { return set.files.front().patched; }

TEST(ConfigFold, TheRoutersConfigBranchesFoldToTheArmsItsConfigRuns) {
  ScratchDir dir("fold_gate");
  PatchSet set = make_patches(PatchRequest{plan_for_model_copy(dir, "deepseek_v3_like"), {}, {}});
  std::string gate = id_with(set, "moe.gating_group_topk");
  ASSERT_FALSE(gate.empty()) << fmt::format("{}", fmt::join(set.applied, ", "));
  std::vector<std::string> folds = folds_of(set, gate);
  EXPECT_EQ(folds.size(), 3u) << fmt::format("{}", fmt::join(folds, "\n"));
  EXPECT_NE(std::find(folds.begin(), folds.end(),
                      "config branch `if self.score_func == \"softmax\"` folded to its else arm "
                      "(scoring_func == 'softmax' = False)"),
            folds.end());
  EXPECT_NE(std::find(folds.begin(), folds.end(),
                      "config branch `if self.n_groups > 1` folded to its then arm (n_group > 1 = True)"),
            folds.end());
  const std::string& text = patched_text(set);
  EXPECT_EQ(text.find("if self.n_groups > 1:"), std::string::npos);
  EXPECT_EQ(text.find("logits.softmax(dim=-1)"), std::string::npos) << "the arm the config does not run goes";
  EXPECT_NE(text.find("        # config fold: `if self.n_groups > 1` -> then arm (n_group > 1 = True)\n"
                      "        # config fold: `if self.norm_topk_prob and self.topk > 1` -> then arm"),
            std::string::npos);
}

TEST(ConfigFold, TheTakenArmsOtherStatementsStayMovedOutWithTheirComments) {
  ScratchDir dir("fold_mla");
  PatchSet set = make_patches(PatchRequest{plan_for_model_copy(dir, "deepseek_v3_like"), {}, {}});
  std::string mla = id_with(set, "mla.fia_absorb");
  ASSERT_FALSE(mla.empty()) << fmt::format("{}", fmt::join(set.applied, ", "));
  EXPECT_EQ(folds_of(set, mla).size(), 2u);
  const std::string& text = patched_text(set);
  // Before the run: a comment and a nested if, one level out.
  EXPECT_NE(text.find("        # W_UK folded into the query: q_nope [b,s,h,nope] x W_UK [h,nope,c] -> [b,s,h,c].\n"
                      "        w_kv_up = self.kv_b_proj.weight\n"
                      "        if self.kv_b_proj.scale is not None:\n"
                      "            w_kv_up = weight_dequant(w_kv_up, self.kv_b_proj.scale)\n"),
            std::string::npos);
  // After it: the lift of the latent output, which the chain leaves.
  EXPECT_NE(text.find(")[0]\n        out = torch.einsum(\"bshc,hdc->bshd\", out_latent, w_uv)\n"), std::string::npos);
  // Two ifs with one test: one comment.
  const std::string comment = "# config fold: `if self.attn_impl == \"naive\"` -> else arm";
  size_t first = text.find(comment);
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(text.find(comment, first + 1), std::string::npos);
  // The naive arm, which reads the probabilities the chain no longer makes, is gone.
  EXPECT_EQ(text.find("self.v_cache[:b, :end_pos])"), std::string::npos);
}

TEST(ConfigFold, AnElifFoldsToTheClauseTheConfigRuns) {
  ScratchDir dir("fold_elif");
  PatchSet set = make_patches(PatchRequest{
      plan_for_model_copy(dir, "deepseek_v3_like",
                          [](std::string text) {
                            return testing::replaced(text,
                                                     "        else:\n"
                                                     "            scores = logits.sigmoid()\n",
                                                     "        elif self.score_func == \"sigmoid\":\n"
                                                     "            scores = logits.sigmoid()\n"
                                                     "        else:\n"
                                                     "            raise ValueError(self.score_func)\n");
                          }),
      {}, {}});
  std::string gate = id_with(set, "moe.gating_group_topk");
  ASSERT_FALSE(gate.empty()) << fmt::format("{}", fmt::join(set.applied, ", "));
  std::vector<std::string> folds = folds_of(set, gate);
  EXPECT_NE(std::find(folds.begin(), folds.end(),
                      "config branch `if self.score_func == \"sigmoid\"` folded to its then arm "
                      "(scoring_func == 'sigmoid' = True)"),
            folds.end())
      << fmt::format("{}", fmt::join(folds, "\n"));
  EXPECT_EQ(patched_text(set).find("raise ValueError(self.score_func)"), std::string::npos);
}

// DeepSeek's own inference code writes the router and the rotary helper
// differently: the logits from a helper with two returns, a copy of the
// scores kept for the gather, the scale applied in place, the rotary result
// bound to a local before its closing cast.
std::string official_style(std::string text) {
  size_t from = text.find("        logits = F.linear(x.float(), self.weight.float())\n");
  size_t to = text.find("        return topk_weight.type_as(x), topk_idx\n");
  EXPECT_TRUE(from != std::string::npos && to != std::string::npos) << "the gate's forward is not where expected";
  if (from == std::string::npos || to == std::string::npos) return text;
  text.replace(from, to - from,
               "        scores = router_logits(x, self.weight)\n"
               "        if self.score_func == \"softmax\":\n"
               "            scores = scores.softmax(dim=-1)\n"
               "        else:\n"
               "            scores = scores.sigmoid()\n"
               "        original_scores = scores\n"
               "        scores = scores + self.e_score_correction_bias.float()\n"
               "        if self.n_groups > 1:\n"
               "            grouped = scores.view(x.size(0), self.n_groups, -1)\n"
               "            group_strength = grouped.topk(2, dim=-1).values.sum(dim=-1)\n"
               "            kept_groups = group_strength.topk(self.topk_groups, dim=-1).indices\n"
               "            keep = torch.zeros_like(group_strength, dtype=torch.bool).scatter_(1, kept_groups, True)\n"
               "            scores = grouped.masked_fill(~keep.unsqueeze(-1), float(\"-inf\")).flatten(1)\n"
               "        topk_idx = torch.topk(scores, self.topk, dim=-1, sorted=False).indices\n"
               "        topk_weight = original_scores.gather(1, topk_idx)\n"
               "        if self.norm_topk_prob and self.topk > 1:\n"
               "            topk_weight = topk_weight / (topk_weight.sum(dim=-1, keepdim=True) + 1e-20)\n"
               "        topk_weight *= self.route_scale\n");
  text = testing::replaced(text, "class Gate(nn.Module):",
                           "def router_logits(x, weight):\n"
                           "    if weight.dtype == torch.float32:\n"
                           "        return F.linear(x.float(), weight)\n"
                           "    return F.linear(x.float(), weight.float())\n"
                           "\n"
                           "\n"
                           "class Gate(nn.Module):");
  return testing::replaced(text, "    return torch.view_as_real(rotated).flatten(3).to(in_dtype)\n",
                           "    y = torch.view_as_real(rotated).flatten(3)\n"
                           "    return y.to(in_dtype)\n");
}

TEST(ConfigFold, TheOfficialStyleRouterAndAttentionAreRewrittenToo) {
  ScratchDir dir("fold_official");
  PatchSet set = make_patches(PatchRequest{plan_for_model_copy(dir, "deepseek_v3_like", official_style), {}, {}});
  EXPECT_FALSE(id_with(set, "moe.gating_group_topk").empty())
      << fmt::format("{}", fmt::join(set.manual | std::views::transform([](const ManualStep& m) { return m.what; }), "\n"));
  std::string mla = id_with(set, "mla.fia_absorb");
  ASSERT_FALSE(mla.empty());
  const std::string& text = patched_text(set);
  // The scores' copy went with the chain; the in-place scale with it.
  EXPECT_EQ(text.find("original_scores = scores"), std::string::npos);
  EXPECT_EQ(text.find("topk_weight *= self.route_scale"), std::string::npos);
  // The rotated query is read by the name the attention gives it, not the helper's local.
  EXPECT_NE(text.find("query_rope=q_rot"), std::string::npos);
}

TEST(ConfigFold, AChainInTheArmTheConfigDoesNotRunStaysByHand) {
  ScratchDir dir("fold_untaken");
  PatchSet set = make_patches(PatchRequest{plan_for_model_copy(dir, "deepseek_v3_like", nullptr,
                                                               [](nlohmann::json config) {
                                                                 config["attn_impl"] = "naive";
                                                                 return config;
                                                               }),
                                           {}, {}});
  EXPECT_TRUE(id_with(set, "mla.fia_absorb").empty());
  bool told = std::any_of(set.manual.begin(), set.manual.end(), [](const ManualStep& m) {
    return m.candidate.rfind("mla.fia_absorb@", 0) == 0 &&
           m.what.find("lie in the else arm of the if statement at") != std::string::npos &&
           m.what.find("which this config does not run (attn_impl == 'naive' = True)") != std::string::npos;
  });
  EXPECT_TRUE(told) << fmt::format("{}", fmt::join(set.manual | std::views::transform([](const ManualStep& m) {
                                                     return m.what;
                                                   }),
                                                   "\n"));
  EXPECT_NE(patched_text(set).find("if self.attn_impl == \"naive\":"), std::string::npos);
}

}  // namespace
}  // namespace npufuse::apply
