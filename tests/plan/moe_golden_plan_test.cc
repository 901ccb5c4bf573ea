// Golden plans of the MoE/MLA test models, one per deployment (TP only or
// EP, A2 or A3, prefill or decode), in tests/plan/golden/<model>.<setup>.json,
// plus the negative properties no golden may lose: a softmax-scored router
// never gets the sigmoid gate operator, and a clamped SwiGLU never npu_swiglu.
// NPUFUSE_UPDATE_GOLDENS=1 rewrites the goldens (read the diff before committing).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <map>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "../support/cli_golden.h"

namespace {

struct Deployment {
  const char* model;
  const char* name;   // golden file suffix
  const char* flags;  // deployment flags, or --deploy with a file under tests/plan/data/
};

const Deployment kSetups[] = {
    {"deepseek_v3_like", "tp8_a3_prefill", "--tp 8 --chip A3 --stage prefill"},
    {"deepseek_v3_like", "tp8_a2_decode", "--tp 8 --chip A2 --stage decode"},
    {"deepseek_v3_like", "ep16_a2_decode", "--deploy tests/plan/data/deepseek_ep16_a2_decode.toml"},
    {"deepseek_v3_like", "ep8_a2_decode", "--deploy tests/plan/data/deepseek_ep8_a2_decode.toml"},
    {"deepseek_v3_like", "ep16_a3_prefill", "--deploy tests/plan/data/deepseek_ep16_a3_prefill.toml"},
    {"deepseek_v3_like", "ep16_a3_decode", "--ep 16 --chip A3 --stage decode"},
    {"deepseek_v32_like", "tp8_a3_decode", "--tp 8 --chip A3 --stage decode"},
    {"deepseek_v32_like", "ep16_a3_decode", "--tp 8 --ep 16 --chip A3 --stage decode"},
    {"deepseek_v32_like", "tp8_a3_decode_c8", "--tp 8 --chip A3 --stage decode --quant w8a8c8"},
    {"deepseek_v32_like", "tp8_a2_prefill", "--tp 8 --chip A2 --stage prefill"},
    {"deepseek_v32_like", "ep8_a2_decode", "--tp 8 --ep 8 --chip A2 --stage decode"},
    {"qwen3_moe_like", "tp4_a2_prefill", "--tp 4 --chip A2 --stage prefill"},
    {"qwen3_moe_like", "ep4_a2_decode", "--tp 4 --ep 4 --chip A2 --stage decode"},
    {"qwen3_moe_like", "ep8_a3_prefill", "--tp 8 --ep 8 --chip A3 --stage prefill"},
    {"qwen3_moe_like", "ep8_a3_decode", "--ep 8 --chip A3 --stage decode"},
    {"gpt_oss_like", "tp2_a3_decode", "--tp 2 --chip A3 --stage decode"},
    {"gpt_oss_like", "ep4_a3_prefill", "--tp 4 --ep 4 --chip A3 --stage prefill"},
};

std::string plan_json(const Deployment& s) {
  const std::string dir = std::string("tests/models/") + s.model;
  std::string args = dir + "/model.py --config " + dir + "/config.json " + s.flags + " --format json";
  std::string run = npufuse::testing::run_cli_case("analyze", args, "", std::string("plan_") + s.model + "_" + s.name);
  size_t out_begin = run.find("--- stdout\n") + 11;
  size_t out_end = run.find("--- stderr\n", out_begin);
  EXPECT_NE(run.find("--- exit 0\n"), std::string::npos) << run;
  return run.substr(out_begin, out_end - out_begin);
}

// The plan with what varies between identical analyses removed.
std::string stable_plan(const std::string& json_text) {
  nlohmann::ordered_json plan = nlohmann::ordered_json::parse(json_text);
  plan.erase("tool_version");
  for (auto& file : plan["files"]) file.erase("sha256");
  return plan.dump(2) + "\n";
}

// Every API a candidate or an alternative offers (statuses `candidate` and
// `candidate_with_prerequisites`; a `not_applicable` entry is a refusal).
void offered_apis(const nlohmann::json& candidate, std::vector<std::string>& out) {
  std::string status = candidate.value("status", "");
  if (status == "candidate" || status == "candidate_with_prerequisites")
    for (const auto& a : candidate.value("apis", nlohmann::json::array())) out.push_back(a.get<std::string>());
  for (const auto& alt : candidate.value("alternatives", nlohmann::json::array())) offered_apis(alt, out);
}

bool proposes(const std::string& json_text, const std::string& api) {
  nlohmann::json plan = nlohmann::json::parse(json_text);
  std::vector<std::string> apis;
  for (const auto& c : plan["candidates"]) offered_apis(c, apis);
  return std::find(apis.begin(), apis.end(), api) != apis.end();
}

class MoeGoldenPlanTest : public ::testing::TestWithParam<Deployment> {};

TEST_P(MoeGoldenPlanTest, MatchesGolden) {
  const Deployment& s = GetParam();
  const std::string golden = std::string(NPUFUSE_SOURCE_DIR) + "/tests/plan/golden/" + s.model + "." + s.name + ".json";
  if (!std::filesystem::exists(golden) && !std::getenv("NPUFUSE_UPDATE_GOLDENS"))
    GTEST_SKIP() << "no golden recorded yet for " << s.model << " " << s.name
                 << ": NPUFUSE_UPDATE_GOLDENS=1 plan_tests --gtest_filter='MoeModels*' records it (read it first)";
  npufuse::testing::expect_golden(golden, stable_plan(plan_json(s)));
}

INSTANTIATE_TEST_SUITE_P(MoeModels, MoeGoldenPlanTest, ::testing::ValuesIn(kSetups),
                         [](const ::testing::TestParamInfo<Deployment>& info) {
                           return std::string(info.param.model) + "_" + info.param.name;
                         });

// qwen3_moe_like scores its router with a softmax: the sigmoid/group gate
// operator (npu_moe_gating_top_k) would compute other weights.
TEST(MoeNegativePlan, SoftmaxRouterNeverGetsSigmoidGate) {
  for (const Deployment& s : kSetups) {
    if (std::string(s.model) != "qwen3_moe_like") continue;
    std::string plan = plan_json(s);
    EXPECT_TRUE(proposes(plan, "npu_moe_gating_top_k_softmax")) << s.name;
    EXPECT_FALSE(proposes(plan, "npu_moe_gating_top_k")) << s.name;
  }
}

// gpt_oss_like clamps gate and up and offsets up by one: npu_swiglu would
// change the numbers, so no candidate may propose it.
TEST(MoeNegativePlan, ClampedSwigluNeverGetsNpuSwiglu) {
  for (const Deployment& s : kSetups) {
    if (std::string(s.model) != "gpt_oss_like") continue;
    EXPECT_FALSE(proposes(plan_json(s), "npu_swiglu")) << s.name;
  }
}

}  // namespace

namespace {

const nlohmann::json* candidate_of(const nlohmann::json& plan, const std::string& rule) {
  for (const auto& c : plan["candidates"])
    if (c.value("rule", "") == rule) return &c;
  return nullptr;
}

bool evidence_mentions(const nlohmann::json& c, const std::string& text) {
  for (const auto& e : c.value("evidence", nlohmann::json::array()))
    if (e.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

// EP decode on A3: the expert loop, its shared expert and the next layer's
// residual add + RMSNorm are one npu_moe_distribute_combine_add_rms_norm
// chain, and it says which shorter chains it takes in.
TEST(MoeCombineAddRmsNorm, OfferedOnA3ForTheMoeIntoNextLayerSeam) {
  nlohmann::json plan = nlohmann::json::parse(plan_json({"deepseek_v3_like", "ep16_a3_decode_seam", "--ep 16 --chip A3 --stage decode"}));
  const nlohmann::json* c = candidate_of(plan, "moe.experts_distribute_add_rms_norm");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["status"], "candidate_with_prerequisites");
  EXPECT_TRUE(evidence_mentions(*c, "shared = shared")) << c->dump(1);
  EXPECT_TRUE(evidence_mentions(*c, "weight = self.layers[].attn_norm.weight")) << c->dump(1);
  EXPECT_TRUE(evidence_mentions(*c, "takes in the chains of")) << c->dump(1);
  const nlohmann::json* shorter = candidate_of(plan, "moe.experts_distribute");
  ASSERT_NE(shorter, nullptr);
  EXPECT_TRUE(evidence_mentions(*shorter, "also part of the longer chain of moe.experts_distribute_add_rms_norm")) << shorter->dump(1);
}

// On A2 the fused combine does not exist: the candidate is refused citing
// the product rule, and the shorter chains stay on their own.
TEST(MoeCombineAddRmsNorm, RefusedOnA2WithTheProductConstraint) {
  nlohmann::json plan = nlohmann::json::parse(plan_json({"deepseek_v3_like", "ep16_a2_decode_seam", "--ep 16 --chip A2 --stage decode"}));
  const nlohmann::json* c = candidate_of(plan, "moe.experts_distribute_add_rms_norm");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["status"], "not_applicable");
  bool cites = false;
  for (const auto& b : (*c)["blocking"]) cites |= b.get<std::string>().find("a3_only") != std::string::npos;
  EXPECT_TRUE(cites) << c->dump(1);
  const nlohmann::json* shorter = candidate_of(plan, "moe.experts_distribute");
  ASSERT_NE(shorter, nullptr);
  EXPECT_TRUE(evidence_mentions(*shorter, "so this chain stays on its own")) << shorter->dump(1);
}

// Without expert parallelism the MC2 chain is not considered at all.
TEST(MoeCombineAddRmsNorm, NotOfferedWithoutExpertParallelism) {
  std::string plan = plan_json({"deepseek_v3_like", "tp8_a3_decode_seam", "--tp 8 --chip A3 --stage decode"});
  EXPECT_FALSE(proposes(plan, "npu_moe_distribute_combine_add_rms_norm"));
}

// norm.add_rms_norm's first_layer_plain_norm (RULE prerequisite with
// "seam": "into_next_layer") is listed only for the chain into the next
// layer's input norm: not for the add+norm inside a layer, nor for the last
// layer's add into the final norm.
TEST(SeamPrerequisites, FirstLayerPlainNormOnlyIntoTheNextLayer) {
  nlohmann::json plan = nlohmann::json::parse(plan_json({"deepseek_v3_like", "ep16_a3_decode_prereq", "--ep 16 --chip A3 --stage decode"}));
  std::map<std::string, bool> first_layer;
  for (const auto& c : plan["candidates"]) {
    if (c.value("rule", "") != "norm.add_rms_norm") continue;
    bool has = false;
    for (const auto& p : c["prerequisites"]) has |= p["id"] == "first_layer_plain_norm";
    first_layer[c["id"].get<std::string>()] = has;
  }
  const std::string at = "norm.add_rms_norm@tests/models/deepseek_v3_like/model.py:";
  ASSERT_EQ(first_layer.size(), 3u);
  EXPECT_FALSE(first_layer.at(at + "394"));  // attention residual into ffn_norm, one layer
  EXPECT_TRUE(first_layer.at(at + "395"));   // the MoE residual into the next Block's attn_norm
  EXPECT_FALSE(first_layer.at(at + "416"));  // the last Block into the final norm
}

}  // namespace

namespace {

// One C8 step, both ways round: `status` of the chain's candidate and the
// rules of its alternatives.
std::pair<std::string, std::vector<std::string>> chain_at(const nlohmann::json& plan, const std::string& rule) {
  for (const auto& c : plan["candidates"]) {
    std::vector<std::string> rules{c.value("rule", "")};
    for (const auto& a : c.value("alternatives", nlohmann::json::array())) rules.push_back(a.value("rule", ""));
    if (std::find(rules.begin(), rules.end(), rule) != rules.end()) return {c.value("rule", ""), rules};
  }
  return {};
}

// A C8 deployment keeps the latent and index-key caches in int8: the
// quantised indexer and SFA are preferred, the bf16 operators refused with
// the dtype constraint; on a bf16 deployment the quantised rules are not
// offered at all (withheld with their condition in the notes).
TEST(C8SparseAttention, QuantisedOperatorsOnlyWhereTheCacheIsInt8) {
  nlohmann::json c8 = nlohmann::json::parse(plan_json({"deepseek_v32_like", "tp8_a3_decode_c8_check", "--tp 8 --chip A3 --stage decode --quant w8a8c8"}));
  EXPECT_EQ(chain_at(c8, "mla.sparse_flash_attention").first, "mla.kv_quant_sparse_flash_attention");
  EXPECT_EQ(chain_at(c8, "indexer.lightning_indexer").first, "indexer.quant_lightning_indexer");
  std::string c8_text = c8.dump();
  EXPECT_NE(c8_text.find("npu_sparse_flash_attention:kv_cache_not_int8"), std::string::npos);
  EXPECT_NE(c8_text.find("npu_lightning_indexer:key_cache_not_int8"), std::string::npos);

  std::string bf16 = plan_json({"deepseek_v32_like", "tp8_a3_decode_bf16_check", "--tp 8 --chip A3 --stage decode --quant bf16"});
  EXPECT_FALSE(proposes(bf16, "npu_kv_quant_sparse_flash_attention"));
  EXPECT_FALSE(proposes(bf16, "npu_quant_lightning_indexer"));
  EXPECT_TRUE(proposes(bf16, "npu_sparse_flash_attention"));
  EXPECT_TRUE(proposes(bf16, "npu_lightning_indexer"));
  EXPECT_NE(bf16.find("it applies only when quant == 'w8a8c8', and here quant = 'bf16' (--quant)"), std::string::npos);
}

}  // namespace
