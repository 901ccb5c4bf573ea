// apply end to end on a copy of the llama-like test model: analyze, write
// the JSON plan, make the patches, write them.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "apply/apply_error.h"
#include "apply/patch_output.h"
#include "apply/patch_plan.h"
#include "apply_test_support.h"
#include "plan/analyze.h"
#include "report/plan_json.h"

namespace npufuse::apply {
namespace {

using testing::ScratchDir;
using testing::source_path;

// The model and its config copied into `dir`, analysed, the plan written to
// dir/plan.json; returns the plan's path.
std::string plan_for_copy(const ScratchDir& dir, const std::string& model = "model.py") {
  std::filesystem::copy_file(source_path("tests/models/llama_like/model.py"), dir.file(model),
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(source_path("tests/models/llama_like/config.json"), dir.file("config.json"),
                             std::filesystem::copy_options::overwrite_existing);
  plan::AnalyzeOptions o;
  o.paths = {dir.file(model)};
  o.config = dir.file("config.json");
  write_file_atomic(dir.file("plan.json"), report::plan_to_json(plan::analyze(o)).dump(2));
  return dir.file("plan.json");
}

bool has_prefix(const std::vector<std::string>& ids, const std::string& prefix) {
  return std::any_of(ids.begin(), ids.end(), [&](const std::string& id) { return id.rfind(prefix, 0) == 0; });
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PatchPlan, LlamaLikeNormRopeAndSwigluWithMergedGateUpRewritten) {
  ScratchDir dir("llama");
  PatchSet set = make_patches(PatchRequest{plan_for_copy(dir), {}, {}});
  EXPECT_TRUE(has_prefix(set.applied, "norm.rms_norm@")) << fmt::format("{}", fmt::join(set.applied, ", "));
  EXPECT_TRUE(has_prefix(set.applied, "rope.rope_half@"));
  EXPECT_TRUE(has_prefix(set.applied, "ffn.swiglu@"));
  // add_rms_norm is rewritten or listed with the reason it is not; never dropped silently.
  bool add_norm_manual = std::any_of(set.manual.begin(), set.manual.end(), [](const ManualStep& m) {
    return m.candidate.rfind("norm.add_rms_norm@", 0) == 0 && !m.what.empty();
  });
  std::string listed;
  for (const ManualStep& m : set.manual) listed += m.candidate + ": " + m.what + "\n";
  EXPECT_TRUE(add_norm_manual || has_prefix(set.applied, "norm.add_rms_norm@")) << listed;

  ASSERT_EQ(set.files.size(), 1u);
  const PatchedFile& f = set.files[0];
  EXPECT_NE(f.patched.find("return torch_npu.npu_rms_norm(hidden_states, self.weight, epsilon=self.variance_epsilon)[0]"),
            std::string::npos);
  EXPECT_NE(f.patched.find("    rotated_q, rotated_k = q_bsnd.transpose(1, 2), k_bsnd.transpose(1, 2)\n"), std::string::npos);
  EXPECT_EQ(count_of(f.patched, "import torch_npu\n"), 1u);
  EXPECT_NE(f.patched.find("from torch import nn\nimport torch_npu\n"), std::string::npos);
  // Outside the edits the bytes are the original's.
  ASSERT_FALSE(f.edits.empty());
  EXPECT_EQ(f.patched.substr(0, f.edits.front().begin), f.original.substr(0, f.edits.front().begin));
  size_t tail = f.original.size() - f.edits.back().end;
  EXPECT_EQ(f.patched.substr(f.patched.size() - tail), f.original.substr(f.edits.back().end));
  EXPECT_NE(f.patched.find("        self.gate_up_proj = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)\n"
                           "        self._register_load_state_dict_pre_hook(_npufuse_merge_on_load((\"gate_proj\", \"up_proj\"), "
                           "\"gate_up_proj\"))\n        self.down_proj"),
            std::string::npos);
  EXPECT_NE(f.patched.find("return self.down_proj(torch_npu.npu_swiglu(self.gate_up_proj(x), dim=-1))"), std::string::npos);
  EXPECT_EQ(count_of(f.patched, "def _npufuse_merge_on_load("), 1u);
  EXPECT_EQ(f.patched.find("self.up_proj"), std::string::npos);
  EXPECT_NE(f.patched.find("    # Swap the two halves of the last axis, negating the one that moves to the front.\n"),
            std::string::npos);
}

TEST(PatchPlan, MergeRefusedWhenAProjectionIsUsedElsewhere) {
  ScratchDir dir("merge_refused");
  std::string plan_path = plan_for_copy(dir);
  std::string text = read_file(dir.file("model.py"));
  const std::string anchor = "        self.act_fn = nn.SiLU()\n";
  ASSERT_NE(text.find(anchor), std::string::npos);
  text.insert(text.find(anchor) + anchor.size(), "\n    def gate_width(self):\n        return self.gate_proj.out_features\n");
  write_file_atomic(dir.file("model.py"), text);
  plan::AnalyzeOptions o;
  o.paths = {dir.file("model.py")};
  o.config = dir.file("config.json");
  write_file_atomic(plan_path, report::plan_to_json(plan::analyze(o)).dump(2));
  PatchSet set = make_patches(PatchRequest{plan_path, {}, {}});
  EXPECT_FALSE(has_prefix(set.applied, "ffn.swiglu@"));
  bool told = std::any_of(set.manual.begin(), set.manual.end(), [&](const ManualStep& m) {
    return m.candidate.rfind("ffn.swiglu@", 0) == 0 && m.what.find("also used at " + dir.file("model.py") + ":") != std::string::npos;
  });
  EXPECT_TRUE(told);
}

TEST(PatchPlan, OnlyRestrictsAndUnknownIdSuggestsTheClosest) {
  ScratchDir dir("only");
  std::string plan_path = plan_for_copy(dir);
  plan::Plan p = report::plan_from_json(nlohmann::json::parse(read_file(plan_path)));
  std::string norm_id;
  for (const plan::Candidate& c : p.candidates)
    if (c.rule == "norm.rms_norm") norm_id = c.id;
  ASSERT_FALSE(norm_id.empty());
  PatchSet set = make_patches(PatchRequest{plan_path, {}, {norm_id}});
  EXPECT_EQ(set.applied, std::vector<std::string>{norm_id});
  try {
    make_patches(PatchRequest{plan_path, {}, {norm_id + "x"}});
    FAIL() << "expected ApplyError";
  } catch (const ApplyError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean '" + norm_id + "'"), std::string::npos) << e.what();
  }
}

TEST(PatchPlan, ChangedSourceRefusedNamingTheFile) {
  ScratchDir dir("stale");
  std::string plan_path = plan_for_copy(dir);
  write_file_atomic(dir.file("model.py"), read_file(dir.file("model.py")) + "# edited after the analysis\n");
  try {
    make_patches(PatchRequest{plan_path, {}, {}});
    FAIL() << "expected ApplyError";
  } catch (const ApplyError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind(dir.file("model.py") + ": changed since", 0), 0u) << what;
  }
}

TEST(PatchPlan, MalformedPlanNamesLineAndColumn) {
  ScratchDir dir("badjson");
  write_file_atomic(dir.file("plan.json"), "{\n  \"schema_version\": 1,\n  oops\n}\n");
  try {
    make_patches(PatchRequest{dir.file("plan.json"), {}, {}});
    FAIL() << "expected ApplyError";
  } catch (const ApplyError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir.file("plan.json") + ":3:3: ", 0), 0u) << e.what();
  }
  write_file_atomic(dir.file("plan.json"), "{\"schema_version\": 1}");
  EXPECT_THROW(make_patches(PatchRequest{dir.file("plan.json"), {}, {}}), ApplyError);
}

TEST(PatchPlan, OutNeverOverwritesInputsAndSecondApplyChangesNothing) {
  ScratchDir dir("out");
  std::string plan_path = plan_for_copy(dir);
  PatchSet set = make_patches(PatchRequest{plan_path, {}, {}});
  EXPECT_THROW(write_patches(set, OutputRequest{dir.path().string(), "", false}), ApplyError);
  EXPECT_NE(read_file(dir.file("model.py")), set.files[0].patched);

  std::string out = dir.file("patched");
  Written w = write_patches(set, OutputRequest{out, dir.file("patch.diff"), false});
  EXPECT_EQ(read_file(out + "/model.py"), set.files[0].patched);
  EXPECT_EQ(read_file(dir.file("patch.diff")), w.diff);

  // The patched copy analysed and applied again: no chain left to rewrite, no second import.
  std::filesystem::copy_file(dir.file("config.json"), out + "/config.json");
  plan::AnalyzeOptions o;
  o.paths = {out + "/model.py"};
  o.config = out + "/config.json";
  write_file_atomic(out + "/plan.json", report::plan_to_json(plan::analyze(o)).dump(2));
  PatchSet again = make_patches(PatchRequest{out + "/plan.json", {}, {}});
  EXPECT_FALSE(has_prefix(again.applied, "norm.rms_norm@"));
  EXPECT_FALSE(has_prefix(again.applied, "rope.rope_half@"));
  EXPECT_EQ(again.files[0].patched, again.files[0].original);
}

TEST(PatchPlan, InPlaceKeepsABackupAndRefusesToLoseAnOlderOne) {
  ScratchDir dir("inplace");
  std::string plan_path = plan_for_copy(dir);
  std::string original = read_file(dir.file("model.py"));
  PatchSet set = make_patches(PatchRequest{plan_path, {}, {}});
  write_file_atomic(dir.file("model.py.orig"), "something else\n");
  EXPECT_THROW(write_patches(set, OutputRequest{"", "", true}), ApplyError);
  EXPECT_EQ(read_file(dir.file("model.py")), original);
  std::filesystem::remove(dir.file("model.py.orig"));
  write_patches(set, OutputRequest{"", "", true});
  EXPECT_EQ(read_file(dir.file("model.py.orig")), original);
  EXPECT_EQ(read_file(dir.file("model.py")), set.files[0].patched);
  // The plan now describes other bytes: a second run is refused and writes nothing.
  EXPECT_THROW(make_patches(PatchRequest{plan_path, {}, {}}), ApplyError);
}

}  // namespace
}  // namespace npufuse::apply

namespace npufuse::apply {
namespace {

// A cache write made by a call whose value the model drops
// (`self.k.index_copy_(2, pos, k)` as a statement): the statement goes, the
// replacement makes the write in place and binds no result; kv_len_tensor is
// met by the replacement, which takes the start from the write's positions.
TEST(PatchPlan, ADroppedInPlaceCallIsReplacedWithoutAResultName) {
  ScratchDir dir("dropped_call");
  PatchSet set = testing::patches_for_text(
      dir,
      "import torch\n"
      "from torch import nn\n"
      "\n"
      "\n"
      "class StaticCache:\n"
      "    def __init__(self, batch, heads, length, dim):\n"
      "        self.k = torch.zeros(batch, heads, length, dim)\n"
      "        self.v = torch.zeros(batch, heads, length, dim)\n"
      "\n"
      "    def update(self, key_states, value_states, cache_position):\n"
      "        self.k.index_copy_(2, cache_position, key_states)  # keys\n"
      "        self.v.index_copy_(2, cache_position, value_states)\n"
      "        return self.k, self.v\n");
  std::string listed;
  for (const ManualStep& m : set.manual) listed += m.candidate + ": " + m.what + "\n";
  EXPECT_EQ(std::count_if(set.applied.begin(), set.applied.end(),
                          [](const std::string& id) { return id.rfind("kv_cache.cache_update_scatter@", 0) == 0; }),
            2)
      << fmt::format("{}", fmt::join(set.applied, ", ")) << "\n" << listed;
  ASSERT_EQ(set.files.size(), 1u);
  const std::string& patched = set.files[0].patched;
  EXPECT_NE(patched.find("        kv_len = cache_position[:1].expand(key_states.shape[0]).contiguous()\n"
                         "        torch_npu.scatter_update_(self.k, kv_len, key_states, -2)  # keys\n"),
            std::string::npos)
      << patched;
  EXPECT_NE(patched.find("torch_npu.scatter_update_(self.v, kv_len, value_states, -2)\n        return self.k, self.v\n"),
            std::string::npos)
      << patched;
  EXPECT_EQ(patched.find("npu_result"), std::string::npos) << patched;
  EXPECT_EQ(patched.find("index_copy_"), std::string::npos) << patched;
}

// qwen3_like's q_norm and k_norm are the model's one RMSNorm class, whose
// forward norm.rms_norm rewrites: the QK-norm chain in the attention is then
// already fused wherever it runs, and apply says so instead of leaving a
// manual step.
TEST(PatchPlan, AChainWhoseOpsAnotherRewriteAlreadyFusedIsSaidToBeDone) {
  ScratchDir dir("already_fused");
  PatchSet set = make_patches(PatchRequest{testing::plan_for_model_copy(dir, "qwen3_like"), {}, {}});
  std::string qk;
  for (const std::string& s : set.skipped)
    if (s.rfind("norm.qk_norm@", 0) == 0 && s.find("already fused: norm.rms_norm@") != std::string::npos) qk = s;
  EXPECT_FALSE(qk.empty()) << fmt::format("{}", fmt::join(set.skipped, "\n"));
  EXPECT_NE(qk.find("rewrote the code its ops run in"), std::string::npos) << qk;
  for (const ManualStep& m : set.manual) EXPECT_NE(m.candidate.rfind("norm.qk_norm@", 0), 0u) << m.what;
}

}  // namespace
}  // namespace npufuse::apply

namespace npufuse::apply {
namespace {

// A per-tensor RoPE helper: the preferred rule (q and k in one
// npu_apply_rotary_pos_emb call) cannot be written for one tensor, its
// alternative (npu_rotary_mul per tensor) is. The preferred one's reason is
// said with its skip, and no manual step is left for a chain that is done.
TEST(PatchPlan, AnAppliedAlternativeLeavesNoManualStepForThePreferredOne) {
  ScratchDir dir("per_tensor_rope");
  PatchSet set = testing::patches_for_text(dir,
                                           "import torch\n"
                                           "\n"
                                           "\n"
                                           "def rotate(x, cos, sin):\n"
                                           "    a, b = x.chunk(2, dim=-1)\n"
                                           "    c, s = cos[..., : a.shape[-1]], sin[..., : a.shape[-1]]\n"
                                           "    return torch.cat((a * c - b * s, b * c + a * s), dim=-1)\n"
                                           "\n"
                                           "\n"
                                           "def rotate_both(q, k, cos, sin):\n"
                                           "    q = rotate(q, cos, sin)\n"
                                           "    k = rotate(k, cos, sin)\n"
                                           "    return q, k\n");
  std::string all = fmt::format("{}\n{}", fmt::join(set.applied, "\n"), fmt::join(set.skipped, "\n"));
  EXPECT_TRUE(has_prefix(set.applied, "rope.rope_half_split_rotary_mul@")) << all;
  std::string skip;
  for (const std::string& s : set.skipped)
    if (s.rfind("rope.rope_half_split@", 0) == 0) skip = s;
  EXPECT_NE(skip.find("trying its alternative rope.rope_half_split_rotary_mul@"), std::string::npos) << all;
  EXPECT_NE(skip.find("covers only some of the rule's results"), std::string::npos) << skip;
  for (const ManualStep& m : set.manual) EXPECT_NE(m.candidate.rfind("rope.", 0), 0u) << m.candidate << ": " << m.what;
  ASSERT_EQ(set.files.size(), 1u);
  EXPECT_NE(set.files[0].patched.find("return torch_npu.npu_rotary_mul(x, qc, qs)"), std::string::npos)
      << set.files[0].patched;
}

// An applied candidate whose error constraints could not be decided says so,
// naming the facts that decide them: llama_like analysed without a chip,
// batch or sequence lengths.
TEST(PatchPlan, AppliedCandidatesSayWhichFactsTheyStillRestOn) {
  ScratchDir dir("assumed");
  PatchSet set = make_patches(PatchRequest{testing::plan_for_model_copy(dir, "llama_like"), {}, {}});
  std::string said;
  for (const ManualStep& m : set.assumed)
    if (m.candidate.rfind("attention.fia_prefill@", 0) == 0) said = m.what;
  EXPECT_NE(said.find("of its error constraints answer unknown until batch_size, chip, kv_seq_len, q_seq_len are given"),
            std::string::npos)
      << said;
  for (const ManualStep& m : set.assumed)
    EXPECT_TRUE(has_prefix(set.applied, m.candidate.substr(0, m.candidate.find('@') + 1))) << m.candidate;
}

}  // namespace
}  // namespace npufuse::apply
