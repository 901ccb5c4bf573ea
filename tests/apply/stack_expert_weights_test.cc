// The stack_expert_weights refactor: an HF-style expert loop over a
// ModuleList of SwiGLU experts (a copy of the qwen3-MoE-like test model)
// becomes stacked parameters, a load-time hook and the grouped-matmul chain;
// the shapes it refuses say why.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "apply/patch_plan.h"
#include "apply_test_support.h"
#include "plan/analyze.h"
#include "report/plan_json.h"
#include "util/file_io.h"

namespace npufuse::apply {
namespace {

using testing::ScratchDir;
using testing::contains;
using testing::replaced;
using testing::source_path;

std::string plan_for(const ScratchDir& dir, const std::function<std::string(std::string)>& edit = nullptr) {
  return testing::plan_for_model_copy(dir, "qwen3_moe_like", edit);
}

std::string experts_id(const std::string& plan_path) {
  nlohmann::json plan = nlohmann::json::parse(read_file(plan_path));
  for (const auto& c : plan["candidates"])
    if (c["rule"] == "moe.experts_grouped_matmul") return c["id"];
  return "";
}

std::string listed(const PatchSet& set) {
  std::string out;
  for (const ManualStep& m : set.manual) out += "manual " + m.candidate + ": " + m.what + "\n";
  for (const std::string& s : set.skipped) out += "skipped " + s + "\n";
  return out;
}


TEST(StackExpertWeights, TheExpertLoopBecomesTheGroupedMatmulChainOnStackedWeights) {
  ScratchDir dir("stack_experts");
  std::string plan = plan_for(dir);
  std::string id = experts_id(plan);
  ASSERT_FALSE(id.empty());
  PatchSet set = make_patches(PatchRequest{plan, {}, {}});
  ASSERT_TRUE(contains(set.applied, id)) << listed(set);
  const std::string& p = set.files.at(0).patched;
  // __init__: the experts made as before, then stacked; old checkpoints load through the hook.
  EXPECT_NE(p.find("        npu_experts = nn.ModuleList(\n"), std::string::npos) << p;
  EXPECT_NE(p.find("torch.stack([torch.cat([e.gate_proj.weight, e.up_proj.weight], dim=0).t() for e in npu_experts])"),
            std::string::npos);
  EXPECT_NE(p.find("self.npu_w_down = nn.Parameter(torch.stack([e.down_proj.weight.t() for e in npu_experts]).detach())"),
            std::string::npos);
  EXPECT_NE(p.find("self._register_load_state_dict_pre_hook(_npufuse_stack_experts_on_load(\"experts\", \"gate_proj\", "
                   "\"up_proj\", \"down_proj\"))"),
            std::string::npos);
  EXPECT_EQ(p.find("self.experts"), std::string::npos);
  // The forward: the training-only aux loss moved before the replacement, the loop gone.
  size_t aux = p.find("            self.aux_loss = load_balancing_loss(router_logits, self.num_experts, self.top_k)\n");
  size_t routing = p.find("torch_npu.npu_moe_init_routing_v2(");
  ASSERT_NE(aux, std::string::npos);
  ASSERT_NE(routing, std::string::npos);
  EXPECT_LT(aux, routing);
  EXPECT_NE(p.find("torch_npu.npu_grouped_matmul([sorted_rows], [self.npu_w_gate_up]"), std::string::npos);
  EXPECT_NE(p.find("combined = torch_npu.npu_moe_finalize_routing(out, None, None, None,"), std::string::npos);
  EXPECT_EQ(p.find("for expert_idx in range(self.num_experts):"), std::string::npos);
  // The experts' own SwiGLU is taken in: merging its gate/up would break the stacking.
  bool taken_in = std::any_of(set.skipped.begin(), set.skipped.end(), [&](const std::string& s) {
    return s.rfind("ffn.swiglu@", 0) == 0 && s.find("taken in by " + id) != std::string::npos;
  });
  EXPECT_TRUE(taken_in) << listed(set);
}

// HF Mixtral's form: the loop visits only the experts some token chose
// (`mask.sum(...) > 0).nonzero()`), and names each expert before calling it
// (`block = self.experts[eid]`). The hit list only steers the loop, so it is
// no escaping intermediate, and the whole loop goes.
TEST(StackExpertWeights, AHitListLoopWithANamedExpertIsRewrittenWhole) {
  ScratchDir dir("stack_experts_hit_list");
  std::filesystem::copy_file(source_path("rules/moe/fixtures/experts_grouped_matmul_match_hit_list.py"), dir.file("model.py"),
                             std::filesystem::copy_options::overwrite_existing);
  plan::AnalyzeOptions o;
  o.paths = {dir.file("model.py")};
  write_file_atomic(dir.file("plan.json"), report::plan_to_json(plan::analyze(o)).dump(2));
  std::string id = experts_id(dir.file("plan.json"));
  ASSERT_FALSE(id.empty());
  nlohmann::json plan = nlohmann::json::parse(read_file(dir.file("plan.json")));
  for (const auto& c : plan["candidates"])
    if (c["id"] == id) EXPECT_TRUE(c.value("escapes", nlohmann::json::array()).empty()) << c.dump();
  PatchSet set = make_patches(PatchRequest{dir.file("plan.json"), {}, {id}});
  ASSERT_TRUE(contains(set.applied, id)) << listed(set);
  const std::string& p = set.files.at(0).patched;
  EXPECT_EQ(p.find("for eid in used:"), std::string::npos) << p;
  EXPECT_EQ(p.find("self.experts"), std::string::npos);
  EXPECT_NE(p.find("out = torch_npu.npu_moe_finalize_routing("), std::string::npos);
  EXPECT_NE(p.find("expert_num=self.n_experts"), std::string::npos);
}

// Another reader of the expert list would find it gone.
TEST(StackExpertWeights, RefusedWhenTheExpertListIsReadElsewhere) {
  ScratchDir dir("stack_experts_read");
  std::string plan = plan_for(dir, [](std::string m) {
    return replaced(m, "        self.aux_loss: Optional[torch.Tensor] = None\n",
                    "        self.aux_loss: Optional[torch.Tensor] = None\n\n"
                    "    def expert_count(self):\n        return len(self.experts)\n");
  });
  std::string id = experts_id(plan);
  ASSERT_FALSE(id.empty());
  PatchSet set = make_patches(PatchRequest{plan, {}, {}});
  EXPECT_FALSE(contains(set.applied, id));
  EXPECT_NE(listed(set).find("prerequisite stack_expert_weights not done: self.experts is also used at"), std::string::npos)
      << listed(set);
}

// An expert holding more than the three projections the chain reads (a
// parameter of its own) would lose it in the stacking.
TEST(StackExpertWeights, RefusedWhenAnExpertHoldsMoreThanItsProjections) {
  ScratchDir dir("stack_experts_extra");
  std::string plan = plan_for(dir, [](std::string m) {
    return replaced(m, "        self.act_fn = nn.SiLU()\n",
                    "        self.act_fn = nn.SiLU()\n        self.scale = nn.Parameter(torch.ones(1))\n");
  });
  std::string id = experts_id(plan);
  ASSERT_FALSE(id.empty());
  PatchSet set = make_patches(PatchRequest{plan, {}, {}});
  EXPECT_FALSE(contains(set.applied, id));
  EXPECT_NE(listed(set).find("Qwen3MoeMLP holds more than its gate, up and down projections"), std::string::npos)
      << listed(set);
}

}  // namespace
}  // namespace npufuse::apply
