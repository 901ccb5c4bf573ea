#pragma once
// A plan built by hand with one candidate of each status, a fact of each
// value type, an unknown fact and a failing review item, so the renderers can
// be tested without the analysis stages.
#include "plan/plan.h"

namespace npufuse::report::testing {

inline plan::CheckResult check_result(std::string api, std::string id, check::Answer answer, std::string severity,
                                      std::string en, std::string zh, std::string doc, std::vector<std::string> evidence,
                                      std::vector<std::string> missing) {
  plan::CheckResult c;
  c.api = std::move(api);
  c.constraint_id = std::move(id);
  c.answer = answer;
  c.severity = std::move(severity);
  c.message_en = std::move(en);
  c.message_zh = std::move(zh);
  c.doc = std::move(doc);
  c.evidence = std::move(evidence);
  c.missing = std::move(missing);
  return c;
}

inline plan::Plan sample_plan() {
  using namespace npufuse::plan;
  Plan p;
  p.tool_version = "0.1.0";
  p.files = {"models/m/model.py", "models/m/helpers.py"};
  p.file_hashes["models/m/model.py"] = std::string(64, 'a');
  p.options.paths = {"models/m"};
  p.options.config = "models/m/config.json";
  p.options.chip = "A2";
  p.options.tp = 8;
  p.options.stage = "both";
  p.facts.set("head_dim", check::Value(128), "config.json: head_dim");
  p.facts.set("rms_norm_eps", check::Value(1e-6), "config.json: rms_norm_eps");
  p.facts.set("dtype", check::Value("bfloat16"), "config.json: torch_dtype");
  p.facts.set("tie_word_embeddings", check::Value(false), "config.json: tie_word_embeddings");
  p.facts.set("kv_layout", check::Value(check::Value::List{check::Value("B"), check::Value("N")}), "model.py:40");
  p.facts.set("quant", check::Value(), "--quant");
  p.unknown_facts = {"torch_npu_version"};

  Candidate norm;
  norm.id = "norm.rms_norm@models/m/model.py:12";
  norm.module = "norm";
  norm.rule = "norm.rms_norm";
  norm.title = "RMSNorm | weighted";
  norm.stages = {"prefill", "decode"};
  norm.apis = {"npu_rms_norm"};
  norm.status = Status::Candidate;
  norm.location = {"models/m/model.py", 12, 18};
  norm.extra_locations = {{"models/m/model.py", 40, 46}};
  norm.parts = {{"models/m/model.py", 12, 14}, {"models/m/model.py", 17, 18}};
  norm.instance = "model.layers[*].input_layernorm";
  norm.evidence = {"pow(2) -> mean(-1) -> rsqrt -> mul(weight)"};
  norm.checks.push_back(check_result("npu_rms_norm", "dtype", check::Answer::Holds, "error", "x is float16 or bfloat16",
                         "x 为 float16 或 bfloat16", "npu_rms_norm.md#params", {"dtype = bfloat16 (config.json)"}, {}));
  norm.checks.push_back(check_result("npu_rms_norm", "version", check::Answer::Unknown, "warning", "needs torch_npu >= 2.1",
                         "", "npu_rms_norm.md#support", {}, {"torch_npu_version"}));
  norm.checks.back().stage = "decode";
  norm.missing_facts = {"torch_npu_version"};
  norm.verification_cut = "RMSNorm.forward lines 12-18: in hidden_states, out normed";
  norm.confidence = 0.9;

  Candidate rope;
  rope.id = "rope.rotate_half@models/m/model.py:60";
  rope.module = "rope";
  rope.rule = "rope.rotate_half";
  rope.title = "RoPE, half mode";
  rope.stages = {"prefill", "decode"};
  rope.apis = {"npu_rotary_mul"};
  rope.status = Status::CandidateWithPrerequisites;
  rope.location = {"models/m/model.py", 60, 64};
  rope.evidence = {"q * cos + rotate_half(q) * sin"};
  rope.prerequisites.push_back({"rope_cos_sin_precompute", "Precompute cos/sin once per step",
                                "每步预先计算一次 cos/sin", true, {"models/m/model.py", 30, 35}});
  rope.escapes = {"rotate_half(q) is also returned to the caller"};
  Candidate rope_per_tensor;
  rope_per_tensor.id = "rope.rotate_half_mul@models/m/model.py:60";
  rope_per_tensor.module = "rope";
  rope_per_tensor.rule = "rope.rotate_half_mul";
  rope_per_tensor.title = "RoPE, half mode, per tensor";
  rope_per_tensor.stages = {"prefill", "decode"};
  rope_per_tensor.apis = {"npu_rotary_mul_per_tensor"};
  rope_per_tensor.status = Status::NotApplicable;
  rope_per_tensor.location = rope.location;
  rope_per_tensor.blocking = {"head_dim 96 is not 64 or 128 (rotary.md#limits)"};
  rope_per_tensor.evidence = {"q * cos + rotate_half(q) * sin, per tensor"};
  rope.alternatives.push_back(rope_per_tensor);

  Candidate ffn;
  ffn.id = "ffn.swiglu@models/m/model.py:80";
  ffn.module = "ffn";
  ffn.rule = "ffn.swiglu";
  ffn.title = "SwiGLU, clamped";
  ffn.stages = {"decode"};
  ffn.apis = {"npu_swiglu"};
  ffn.status = Status::NotApplicable;
  ffn.location = {"models/m/model.py", 80, 82};
  ffn.blocking = {"npu_swiglu has no clamp (npu_swiglu.md#semantics)"};
  ffn.near_miss_reasons = {"clamp(max=7.0) between silu and mul"};
  ffn.checks.push_back(check_result("npu_swiglu", "semantics", check::Answer::Violated, "error", "no clamp", "不支持截断",
                        "npu_swiglu.md", {"clamp at model.py:81"}, {}));

  Candidate gap;
  gap.id = "ffn.clamped_swiglu@models/m/model.py:80";
  gap.module = "ffn";
  gap.title = "Clamped SwiGLU";
  gap.stages = {"prefill", "decode"};
  gap.status = Status::NoFusedOp;
  gap.location = {"models/m/model.py", 80, 82};
  gap.requirement = {"sigmoid(x) * x * y, clamped", {"gate [T, I]", "up [T, I]"}, {"out [T, I]"}, "bfloat16", "ND",
                     "npu_swiglu has no clamp; npu_geglu is GeLU"};

  p.candidates = {norm, rope, ffn, gap};
  p.review.push_back({"decomposition_complete", "Modules decomposed", "模块拆解完整", true, {}});
  p.review.push_back({"constraints_confirmed", "Constraints confirmed", "算子约束已确认", false,
                      {"norm.rms_norm@models/m/model.py:12: torch_npu_version unknown"}});
  plan::ChainReport chain;
  chain.id = "gqa_prefill";
  chain.title_en = "GQA attention, prefill";
  chain.title_zh = "GQA注意力prefill";
  chain.stage = "prefill";
  chain.source = "module-attention-gqa";
  chain.steps.push_back({"input_norm", "RMSNorm", "RMSNorm", "covered", {"norm.rms_norm@models/m/model.py:12"}, "", ""});
  chain.steps.push_back({"o_projection", "output projection", "输出投影", "torch", {}, "kept as torch", "保留torch"});
  p.reference_chains.push_back(chain);
  p.notes = {"The attention core was not analysed"};
  return p;
}

}  // namespace npufuse::report::testing
