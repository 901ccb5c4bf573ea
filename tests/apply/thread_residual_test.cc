// The thread_residual refactor: the add+norm chains found across the layer
// loop (a layer's last residual add into the next layer's input norm, the
// last one's into the final norm) rewritten on copies of the llama-like test
// model, and the shapes it refuses, each with its reason.
#include <fmt/format.h>
#include <fmt/ranges.h>
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
  return testing::plan_for_model_copy(dir, "llama_like", edit);
}

// The plan's add_rms_norm candidates across the layer loop: into the next
// layer's norm (placed at the layer's add) and into the final norm.
struct SeamIds {
  std::string next, final_norm;
  std::vector<std::string> both() const { return {next, final_norm}; }
};

SeamIds seam_ids(const std::string& plan_path) {
  nlohmann::json plan = nlohmann::json::parse(read_file(plan_path));
  SeamIds out;
  for (const auto& c : plan["candidates"]) {
    if (c["rule"] != "norm.add_rms_norm") continue;
    for (const auto& e : c["evidence"]) {
      std::string line = e.get<std::string>();
      if (line.rfind("across two layers of the unrolled layer loop", 0) == 0) out.next = c["id"];
      if (line.rfind("across the layer loop", 0) == 0) out.final_norm = c["id"];
    }
  }
  return out;
}

std::string manual_text(const PatchSet& set) {
  std::string out;
  for (const ManualStep& m : set.manual) out += m.candidate + " @ " + m.where + ": " + m.what + "\n";
  return out;
}


TEST(ThreadResidual, TheLayerTakesAndReturnsThePendingResidualAndTheLoopThreadsIt) {
  ScratchDir dir("thread_both");
  std::string plan = plan_for(dir);
  SeamIds seams = seam_ids(plan);
  ASSERT_FALSE(seams.next.empty());
  ASSERT_FALSE(seams.final_norm.empty());
  PatchSet set = make_patches(PatchRequest{plan, {}, {}});
  for (const std::string& id : seams.both()) EXPECT_TRUE(contains(set.applied, id)) << id << "\n" << manual_text(set);
  const std::string& p = set.files.at(0).patched;
  // The layer: a new keyword, the fused add+norm first, the norm call reading it.
  EXPECT_NE(p.find("def forward(self, hidden_states, position_embeddings, attention_mask=None, past_key_value=None, "
                   "npu_residual=None):"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("        npu_normed = None\n"
                   "        if npu_residual is not None:\n"),
            std::string::npos);
  EXPECT_NE(p.find("npu_normed, _, hidden_states = torch_npu.npu_add_rms_norm(npu_residual, hidden_states, "
                   "self.input_layernorm.weight, self.input_layernorm.variance_epsilon)"),
            std::string::npos);
  EXPECT_NE(p.find("(self.input_layernorm(hidden_states) if npu_normed is None else npu_normed)"), std::string::npos);
  // Its last add is handed on.
  EXPECT_NE(p.find("        npu_residual = after_attn\n        return mlp_out, npu_residual\n"), std::string::npos) << p;
  // The loop and the final norm.
  EXPECT_NE(p.find("        npu_residual = None  # the residual add each layer leaves to the next\n"
                   "        for layer in self.layers:\n"
                   "            hidden_states, npu_residual = layer(\n"),
            std::string::npos);
  EXPECT_NE(p.find("past_key_value=past_key_values, npu_residual=npu_residual\n"), std::string::npos);
  EXPECT_NE(p.find("npu_normed, _, hidden_states = torch_npu.npu_add_rms_norm(npu_residual, hidden_states, "
                   "self.norm.weight, self.norm.variance_epsilon)"),
            std::string::npos);
  EXPECT_NE(p.find("return (self.norm(hidden_states) if npu_normed is None else npu_normed), past_key_values"),
            std::string::npos);
}

// Only the chain into the final norm: the layer adds the pending residual
// in plain torch first, and the last add is fused with the final norm.
TEST(ThreadResidual, OnlyTheFinalNormChosenAddsThePendingResidualPlainlyInTheLayer) {
  ScratchDir dir("thread_final");
  std::string plan = plan_for(dir);
  std::string final_norm = seam_ids(plan).final_norm;
  ASSERT_FALSE(final_norm.empty());
  PatchSet set = make_patches(PatchRequest{plan, {}, {final_norm}});
  EXPECT_EQ(set.applied, std::vector<std::string>{final_norm}) << manual_text(set);
  const std::string& p = set.files.at(0).patched;
  EXPECT_NE(p.find("        if npu_residual is not None:\n"
                   "            # The previous layer's last residual add.\n"
                   "            hidden_states = npu_residual + hidden_states\n"),
            std::string::npos)
      << p;
  EXPECT_EQ(p.find("self.input_layernorm.weight"), std::string::npos);
  EXPECT_NE(p.find("self.norm.weight, self.norm.variance_epsilon)"), std::string::npos);
}

// Only the chain into the next layer: after the loop the last layer's add
// is done in plain torch before the (unchanged) final norm.
TEST(ThreadResidual, OnlyTheNextLayerChosenFinishesTheLastAddPlainlyAfterTheLoop) {
  ScratchDir dir("thread_next");
  std::string plan = plan_for(dir);
  std::string next = seam_ids(plan).next;
  ASSERT_FALSE(next.empty());
  PatchSet set = make_patches(PatchRequest{plan, {}, {next}});
  EXPECT_EQ(set.applied, std::vector<std::string>{next}) << manual_text(set);
  const std::string& p = set.files.at(0).patched;
  EXPECT_NE(p.find("        if npu_residual is not None:\n"
                   "            # The last layer's residual add.\n"
                   "            hidden_states = npu_residual + hidden_states\n"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("return self.norm(hidden_states), past_key_values"), std::string::npos);
}

// A norm module written with F.rms_norm makes the chain into the next
// layer's norm and the one into the final norm the same ops: one candidate
// with both instances. Both ends are fused.
TEST(ThreadResidual, OneCandidateForBothNormsFusesTheFinalNormToo) {
  ScratchDir dir("thread_one_candidate");
  std::string model = read_file(source_path("rules/moe/fixtures/experts_distribute_add_rms_norm_match_decoder_stack.py"));
  model = replaced(model,
                   "        self.eps = eps\n        self.weight = nn.Parameter(torch.ones(dim))\n\n    def forward(self, x):\n"
                   "        v = x.float()\n        v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + self.eps)\n"
                   "        return (v * self.weight).type_as(x)\n",
                   "        self.dim = dim\n        self.eps = eps\n        self.weight = nn.Parameter(torch.ones(dim))\n\n"
                   "    def forward(self, x):\n        return F.rms_norm(x, (self.dim,), self.weight, self.eps)\n");
  write_file_atomic(dir.file("model.py"), model);
  plan::AnalyzeOptions o;
  o.paths = {dir.file("model.py")};
  write_file_atomic(dir.file("plan.json"), report::plan_to_json(plan::analyze(o)).dump(2));
  SeamIds seams = seam_ids(dir.file("plan.json"));
  ASSERT_FALSE(seams.next.empty());
  EXPECT_TRUE(seams.final_norm.empty()) << "the two chains are expected to be one candidate here";
  PatchSet set = make_patches(PatchRequest{dir.file("plan.json"), {}, {seams.next}});
  EXPECT_EQ(set.applied, std::vector<std::string>{seams.next}) << manual_text(set);
  const std::string& p = set.files.at(0).patched;
  EXPECT_NE(p.find("npu_normed, _, x = torch_npu.npu_add_rms_norm(npu_residual, x, self.attn_norm.weight, self.attn_norm.eps)"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("npu_normed, _, h = torch_npu.npu_add_rms_norm(npu_residual, h, self.norm.weight, self.norm.eps)"),
            std::string::npos);
  EXPECT_NE(p.find("return (self.norm(h) if npu_normed is None else npu_normed)"), std::string::npos);
  EXPECT_EQ(p.find("h = npu_residual + h"), std::string::npos);
}

// A second maker of the layer class would see its return change.
// qwen3_like's layer writes each residual add around a nested norm call
// (`h = x + self.self_attn(self.input_layernorm(x), ...)`, `out = h +
// self.mlp(self.post_attention_layernorm(h))`). The add+norm inside the layer
// is rewritten with the attention call moved into it and the norm call
// replaced where it is; the refactor across the loop then makes its own edits
// inside that rewrite (the input norm in the moved call) and around it (the
// last add handed on), so all three add+norms are fused.
std::vector<std::string> add_rms_norm_ids(const std::string& plan_path) {
  std::vector<std::string> out;
  const nlohmann::json plan = nlohmann::json::parse(read_file(plan_path));
  for (const auto& c : plan["candidates"])
    if (c["rule"] == "norm.add_rms_norm") out.push_back(c["id"]);
  return out;
}

TEST(ThreadResidual, TheAddNormInsideTheLayerAndTheOnesAcrossItAreMadeTogether) {
  ScratchDir dir("thread_nested");
  std::string plan = testing::plan_for_model_copy(dir, "qwen3_like");
  std::vector<std::string> ids = add_rms_norm_ids(plan);
  ASSERT_EQ(ids.size(), 3u);
  PatchSet set = make_patches(PatchRequest{plan, {}, ids});
  for (const std::string& id : ids) EXPECT_TRUE(contains(set.applied, id)) << id << "\n" << manual_text(set);
  const std::string& p = set.files.at(0).patched;
  EXPECT_NE(p.find("        normed, _, residual = torch_npu.npu_add_rms_norm(x, self.self_attn((self.input_layernorm(x) "
                   "if npu_normed is None else npu_normed), positions, cache), self.post_attention_layernorm.weight, "
                   "self.post_attention_layernorm.eps)\n"
                   "        npu_result, h = normed, residual\n"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("        npu_residual = h\n        out = self.mlp(npu_result)\n        return out, npu_residual\n"),
            std::string::npos)
      << p;
}

TEST(ThreadResidual, TheAddNormInsideTheLayerAloneKeepsTheLastAddWithTheNormReplacedWhereItIs) {
  ScratchDir dir("inner_only");
  std::string plan = testing::plan_for_model_copy(dir, "qwen3_like");
  std::vector<std::string> ids = add_rms_norm_ids(plan);
  ASSERT_EQ(ids.size(), 3u) << fmt::format("{}", fmt::join(ids, ", "));
  SeamIds seams = seam_ids(plan);
  std::string inner;  // the layer's own: neither across the loop nor into the final norm
  for (const std::string& id : ids)
    if (id != seams.next && id != seams.final_norm) inner = id;
  ASSERT_FALSE(inner.empty());
  PatchSet set = make_patches(PatchRequest{plan, {}, {inner}});
  ASSERT_TRUE(contains(set.applied, inner)) << manual_text(set);
  const std::string& p = set.files.at(0).patched;
  EXPECT_NE(p.find("torch_npu.npu_add_rms_norm(x, self.self_attn(self.input_layernorm(x), positions, cache), "),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("        out = h + self.mlp(npu_result)\n        return out\n"), std::string::npos) << p;
}

TEST(ThreadResidual, RefusedWhenTheLayerClassIsMadeTwice) {
  ScratchDir dir("thread_made_twice");
  std::string plan = plan_for(dir, [](std::string m) {
    return replaced(m, "        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)\n",
                    "        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)\n"
                    "        self.extra_layer = LlamaDecoderLayer(config, 0)\n");
  });
  PatchSet set = make_patches(PatchRequest{plan, {}, {}});
  int refused = 0;
  for (const ManualStep& m : set.manual)
    if (m.what.find("prerequisite thread_residual not done: LlamaDecoderLayer is made 2 times") != std::string::npos) ++refused;
  EXPECT_EQ(refused, 2) << manual_text(set);
  for (const std::string& id : seam_ids(plan).both()) EXPECT_FALSE(contains(set.applied, id));
}

// The loop body reading the hidden state besides the call would see the
// layer's output without its last add.
TEST(ThreadResidual, RefusedWhenTheLoopBodyReadsTheHiddenStateElsewhere) {
  ScratchDir dir("thread_loop_reads");
  std::string plan = plan_for(dir, [](std::string m) {
    return replaced(m, "        for layer in self.layers:\n",
                    "        seen = []\n        for layer in self.layers:\n            seen.append(hidden_states)\n");
  });
  PatchSet set = make_patches(PatchRequest{plan, {}, {}});
  std::string manual = manual_text(set);
  EXPECT_NE(manual.find("the loop body also uses hidden_states besides the layer call"), std::string::npos) << manual;
  for (const std::string& id : seam_ids(plan).both()) EXPECT_FALSE(contains(set.applied, id));
}

// The refactor's own names must be free in both functions.
TEST(ThreadResidual, RefusedWhenItsNamesAreTaken) {
  ScratchDir dir("thread_name_taken");
  std::string plan = plan_for(dir, [](std::string m) {
    return replaced(m, "        hidden_states = inputs_embeds\n", "        hidden_states = inputs_embeds\n        npu_normed = None\n");
  });
  SeamIds seams = seam_ids(plan);
  ASSERT_FALSE(seams.next.empty());
  PatchSet set = make_patches(PatchRequest{plan, {}, {}});
  std::string manual = manual_text(set);
  EXPECT_NE(manual.find("prerequisite thread_residual not done: LlamaModel.forward already uses the name npu_normed"),
            std::string::npos)
      << manual;
  for (const std::string& id : seams.both()) EXPECT_FALSE(contains(set.applied, id));
}

}  // namespace
}  // namespace npufuse::apply
