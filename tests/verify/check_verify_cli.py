"""`npufuse verify` and `npufuse apply --verify` from the outside (ctest script tests).

--case llama   verify the llama-like plan on CPU: every candidate apply patches passes
               its harness, the others are checked by their rule cut, every candidate has
               a performance observation, and the whole patched model matches.
--case wrong   a copy of rules/ whose norm.rms_norm replace drops the weight: apply
               --verify must roll that candidate back with its numbers, keep the others,
               and the kept patch must not contain the broken rewrite.
--case alternative  a copy of rules/ whose rope.rope_half replace swaps cos and sin:
               apply --verify must roll it back and keep its plan alternative
               rope.rope_half_rotary_mul in its place, saying so.
--case relative  analyze and apply run inside the model's folder with relative paths
               (as users type them), then `verify OUT` from another folder: every applied
               candidate is found again, its harness passes and the patched model matches.
--case models  apply --verify on every test model: whatever apply patches is kept only
               with a passing model-level check; a model apply cannot patch says why.

Usage: check_verify_cli.py --npufuse BIN --source-dir DIR --case NAME [--model M,...]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def analyze(npufuse, model_dir, plan, rules=None, flags=()):
    cmd = [npufuse, "analyze", model_dir / "model.py", "--config", model_dir / "config.json", "--format", "json",
           "-o", plan, *flags]
    if rules:
        cmd += ["--rules", rules]
    r = run(cmd)
    if r.returncode != 0:
        sys.exit(f"analyze {model_dir} failed: {r.stderr}")


def case_llama(args, src, tmp, problems):
    model = src / "tests" / "models" / "llama_like"
    plan = tmp / "plan.json"
    analyze(args.npufuse, model, plan)
    out = tmp / "verify"
    r = run([args.npufuse, "verify", plan, "--out", out, "--device", "cpu", "--format", "json"])
    print(r.stderr[-3000:], end="")
    report = json.loads((out / "report.json").read_text())
    # The SDPA path's FIA rewrite sits in a function the config (eager) never
    # calls: no check runs its lines, so it is not exercised, and verify says so
    # with exit 1 instead of calling it passed.
    unexercised = sorted(rule_and_line(c["id"]) for c in report["candidates"] if c["status"] == "not_exercised")
    if unexercised != ["attention.fia_prefill:124"]:
        problems.append(f"not exercised: {unexercised}, expected only the SDPA path's attention.fia_prefill:124")
    if r.returncode != (1 if unexercised else 0):
        problems.append(f"verify exited {r.returncode}")
    if not report["candidates"]:
        problems.append("no candidate was verified")
    applied = function_cuts = 0
    for c in report["candidates"]:
        p = c["precision"]
        print(f"{c['id']}: {c['status']}: {c['conclusion']}")
        if c["status"] == "passed" and not (c.get("exercised") or {}).get("by"):
            problems.append(f"{c['id']}: passed without a check running its changed lines")
        if not p.get("passed"):
            problems.append(f"{c['id']}: precision did not pass: {p.get('error') or p.get('max_abs')}")
        if c["applied"]:
            applied += 1
            if (p.get("cut") or "").startswith("function "):
                function_cuts += 1
            elif not p.get("cut_note"):
                problems.append(f"{c['id']}: applied, checked by {p.get('cut')!r} without saying why not its function")
        perf = c["performance"]
        if perf.get("kind") != "estimate" or not perf.get("stages"):
            problems.append(f"{c['id']}: no labelled performance estimate: {perf}")
        if not Path(c["harness"]).exists():
            problems.append(f"{c['id']}: harness {c['harness']} was not written")
    if function_cuts < 2:  # rms_norm and rope are rewritten inside their own functions
        problems.append(f"only {function_cuts} candidates were checked through the user's function")
    if applied < 3:
        problems.append(f"only {applied} candidates were applied (rms_norm, rope_half, swiglu expected)")
    mc = report["model_check"]
    if not mc or not mc.get("passed"):
        problems.append(f"the whole patched model does not match: {mc}")
    # A harness runs again by hand and says the same.
    first = next(c for c in report["candidates"] if c["applied"])
    again = run(["/usr/bin/python3", first["harness"]])
    line = json.loads(again.stdout.strip().splitlines()[-1])
    if line["max_abs"] != first["precision"]["max_abs"]:
        problems.append("running a harness by hand gives other numbers")


def broken_rules(src, tmp):
    rules = tmp / "rules"
    shutil.copytree(src / "rules", rules)
    rule = rules / "norm" / "rms_norm.py"
    text = rule.read_text()
    right = "def replace(hidden_states, weight, eps):\n"
    start = text.index(right)
    body_end = text.find("\n\n\n", start)
    body_end = len(text) if body_end < 0 else body_end
    # Drops the weight: the norm is no longer scaled per channel.
    text = text[:start] + right + "    return torch_npu.npu_rms_norm(hidden_states, torch.ones_like(weight), epsilon=eps)[0]" + text[body_end:]
    rule.write_text(text)
    return rules


def case_wrong(args, src, tmp, problems):
    model = src / "tests" / "models" / "llama_like"
    rules = broken_rules(src, tmp)
    plan = tmp / "plan.json"
    analyze(args.npufuse, model, plan, rules)
    out = tmp / "out"
    r = run([args.npufuse, "apply", model / "model.py", "--plan", plan, "--verify", "--out", out])
    print(r.stdout[-4000:], r.stderr[-2000:], sep="\n")
    if r.returncode != 1:
        problems.append(f"apply --verify exited {r.returncode}, expected 1 (a candidate rolled back)")
    report = json.loads((out / "report.json").read_text())
    by_rule = {c["rule"]: c for c in report["candidates"]}
    norm = by_rule.get("norm.rms_norm")
    if not norm or norm["status"] != "rolled_back":
        problems.append(f"the broken rms_norm was not rolled back: {norm and norm['status']}")
    else:
        p = norm["precision"]
        if p.get("passed") or p.get("max_abs") is None or p["max_abs"] <= 1e-3:
            problems.append(f"the rollback carries no failing numbers: {p}")
        if "max abs" not in norm["conclusion"]:
            problems.append(f"the conclusion does not quote the numbers: {norm['conclusion']}")
    kept = [c["rule"] for c in report["candidates"] if c["status"] == "kept"]
    if "rope.rope_half" not in kept:
        problems.append(f"the correct rope rewrite was not kept: kept {kept}")
    patched = (out / "model.py").read_text()
    if "torch.ones_like(weight)" in patched or "ones_like(self.weight)" in patched:
        problems.append("the broken rewrite is in the kept patch")
    if not (out / "patch.diff").exists() or not (out / "report.md").exists():
        problems.append("patch.diff or report.md missing")
    # Plain apply (no --verify) runs each rewrite before writing: the broken norm
    # computes something else in its function cut, so it is taken out and said why.
    plain = tmp / "plain"
    r = run([args.npufuse, "apply", model / "model.py", "--plan", plan, "--out", plain])
    print(r.stdout[-3000:], r.stderr[-1000:], sep="\n")
    if r.returncode != 0:
        problems.append(f"plain apply exited {r.returncode}")
    refused = [line for line in r.stdout.splitlines()
               if line.startswith("manual:") and "norm.rms_norm@" in line and "not applied:" in line]
    if not refused or "computes something else" not in refused[0]:
        problems.append(f"plain apply did not take the broken norm out: {refused}")
    if any(line.startswith("applied: norm.rms_norm@") for line in r.stdout.splitlines()):
        problems.append("plain apply still calls the broken norm applied")
    if not any(line.startswith("ran: rope.rope_half@") for line in r.stdout.splitlines()):
        problems.append("plain apply did not say the rope rewrite ran")
    if "torch.ones_like(weight)" in (plain / "model.py").read_text():
        problems.append("plain apply wrote the broken rewrite")


# Rewrites the loop is known to roll back, with the reason its check gives.
# Each is a known defect of the rewrite, listed so that the loop's catch is
# pinned and a fix (or a new failure) shows here.
KNOWN_ROLLBACKS = {
    # The norm's input was cast to float32 before an if-block the rewrite keeps;
    # the match binds the float32 value, and npu_rms_norm refuses a float32 x
    # with a bfloat16 gamma.
    "vllm_style": {"norm.rms_norm:137": "gamma dtype torch.bfloat16 does not pair with x dtype torch.float32"},
}


def rule_and_line(candidate_id):
    """`norm.rms_norm@path/model.py:137` -> `norm.rms_norm:137`, the key of KNOWN_ROLLBACKS."""
    return candidate_id.split("@")[0] + ":" + candidate_id.rsplit(":", 1)[-1]


def case_alternative(args, src, tmp, problems):
    model = src / "tests" / "models" / "llama_like"
    rules = tmp / "rules"
    shutil.copytree(src / "rules", rules)
    rule = rules / "rope" / "rope_half.py"
    text = rule.read_text()
    right = "npu_apply_rotary_pos_emb(q_bsnd, k_bsnd, c, s, layout=\"BSND\")"
    if right not in text:
        problems.append("rope_half's replace changed: update this case")
        return
    rule.write_text(text.replace(right, "npu_apply_rotary_pos_emb(q_bsnd, k_bsnd, s, c, layout=\"BSND\")", 1))
    plan = tmp / "plan.json"
    analyze(args.npufuse, model, plan, rules)
    out = tmp / "out"
    r = run([args.npufuse, "apply", model / "model.py", "--plan", plan, "--verify", "--out", out])
    print(r.stdout[-4000:], r.stderr[-2000:], sep="\n")
    report = json.loads((out / "report.json").read_text())
    by_rule = {c["rule"]: c for c in report["candidates"]}
    half = by_rule.get("rope.rope_half")
    if not half or half["status"] != "rolled_back":
        problems.append(f"the broken rope_half was not rolled back: {half and half['status']}")
        return
    alt = by_rule.get("rope.rope_half_rotary_mul")
    if not alt or alt["status"] != "kept":
        problems.append(f"its alternative was not kept in its place: {alt and alt['status']}")
    if "alternative rope.rope_half_rotary_mul" not in half["conclusion"]:
        problems.append(f"the rolled-back candidate does not name the alternative kept: {half['conclusion']}")
    notes = [a for a in half.get("alternatives", []) if a["id"].startswith("rope.rope_half_rotary_mul")]
    if not notes or not notes[0]["outcome"].startswith("tried in its place: kept"):
        problems.append(f"the alternative's outcome is not recorded: {notes}")
    patched = (out / "model.py").read_text()
    if "npu_rotary_mul" not in patched or "npu_apply_rotary_pos_emb" in patched:
        problems.append("the kept patch does not hold the alternative's rewrite alone")


def case_models(args, src, tmp, problems):
    names = args.model.split(",") if args.model else sorted(
        p.name for p in (src / "tests" / "models").iterdir() if (p / "model.py").exists())
    for name in names:
        model = src / "tests" / "models" / name
        plan = tmp / f"{name}.json"
        # The deployment the model's apply expectation is for (rope_inner_broadcast: --chip A2).
        expectation = src / "tests" / "apply" / "expected" / f"{name}.json"
        flags = json.loads(expectation.read_text()).get("analyze_flags", []) if expectation.exists() else []
        analyze(args.npufuse, model, plan, flags=flags)
        out = tmp / name
        r = run([args.npufuse, "apply", model / "model.py", "--plan", plan, "--verify", "--out", out])
        if not (out / "report.json").exists():
            problems.append(f"{name}: no report ({r.returncode}): {r.stderr[-500:]}")
            continue
        report = json.loads((out / "report.json").read_text())
        kept = [c for c in report["candidates"] if c["status"] == "kept"]
        manual = [c for c in report["candidates"] if c["status"] == "manual"]
        rolled = [c for c in report["candidates"] if c["status"] == "rolled_back"]
        print(f"{name}: kept {len(kept)}, manual {len(manual)}, rolled back {len(rolled)}")
        expected = KNOWN_ROLLBACKS.get(name, {})
        for c in rolled:
            print(f"  rolled back {c['id']}: {c['conclusion']}")
            if expected.get(rule_and_line(c["id"]), "\0") not in c["conclusion"]:
                problems.append(f"{name}: {c['id']} was rolled back: {c['conclusion']}")
        for key in expected:
            if not any(rule_and_line(c["id"]) == key for c in rolled):
                problems.append(f"{name}: {key} was expected to be rolled back and was not (update KNOWN_ROLLBACKS)")
        for c in kept:
            mc = c.get("model_check") or {}
            if not mc.get("passed") and not mc.get("skipped"):
                problems.append(f"{name}: {c['id']} kept without a passing model check")
            if mc.get("skipped"):
                print(f"  {c['id']}: model check skipped: {mc['skipped']}")
        if kept:
            whole = report.get("model_check") or {}
            if not whole.get("passed"):
                problems.append(f"{name}: the kept patch set does not match at model level: {whole}")
        else:
            # Nothing patched: each candidate must say why (its manual steps).
            for c in manual:
                if not c["manual"]:
                    problems.append(f"{name}: {c['id']} is manual without a reason")
            print(f"  not patched: " + "; ".join(m for c in manual for m in c["manual"][:1]) if manual
                  else "  no applicable candidate in the plan")


def case_relative(args, src, tmp, problems):
    npufuse = Path(args.npufuse).resolve()
    work = tmp / "work"
    shutil.copytree(src / "tests" / "models" / "qwen3_moe_like", work)
    for cmd in (["analyze", "model.py", "--config", "config.json", "--format", "json", "-o", "plan.json"],
                ["apply", "model.py", "--plan", "plan.json", "--out", "out"]):
        r = run([npufuse] + cmd, cwd=work)
        if r.returncode != 0:
            sys.exit(f"npufuse {cmd[0]} failed: {r.stderr}")
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    r = run([npufuse, "verify", Path("..") / "work" / "out", "--format", "json"], cwd=elsewhere)
    print(r.stderr[-3000:], end="")
    if r.returncode != 0:
        problems.append(f"verify exited {r.returncode}")
    written = work / "out" / "verify" / "report.json"
    if not written.exists():
        problems.append("no report under out/verify")
        return
    report = json.loads(written.read_text())
    applied = json.loads((work / "out" / "npufuse-apply.json").read_text())["applied"]
    if sorted(c["id"] for c in report["candidates"]) != sorted(applied):
        problems.append(f"verified {[c['id'] for c in report['candidates']]}, applied {applied}")
    for c in report["candidates"]:
        print(f"{c['id']}: {c['status']}: {c['conclusion']}")
        if c["status"] != "passed":
            problems.append(f"{c['id']}: {c['status']}: {c['conclusion']}")
    if not (report.get("model_check") or {}).get("passed"):
        problems.append(f"the patched model does not match: {report.get('model_check')}")


# A model file of a package (HF style): relative imports the harness cannot resolve on
# its own, a decorator and a base class from the package, a RoPE helper that rebinds its
# `cos` parameter before the chain, and an RMSNorm the chain reads as passed.
PACKAGE_MODEL = """import torch
from torch import nn

from ...activations import ACT2FN
from ...integrations import use_kernel_forward_from_hub
from ...modeling_layers import GradientCheckpointingLayer


@use_kernel_forward_from_hub("RMSNorm")
class PackNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


def turn(x):
    front = x[..., : x.shape[-1] // 2]
    back = x[..., x.shape[-1] // 2 :]
    return torch.cat((-back, front), dim=-1)


def pairs_rope(q, k, cos, sin):
    cos = cos.unsqueeze(1)
    sin = sin.unsqueeze(1)
    b, h, s, d = q.shape
    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    b, h, s, d = k.shape
    k = k.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
    return (q * cos) + (turn(q) * sin), (k * cos) + (turn(k) * sin)


class PackLayer(GradientCheckpointingLayer):
    def __init__(self, config):
        super().__init__()
        self.norm = PackNorm(config.hidden_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, hidden_states, q_rot, k_rot, cos, sin):
        q_rot, k_rot = pairs_rope(q_rot, k_rot, cos, sin)
        return self.norm(hidden_states), q_rot, k_rot
"""


def case_package(args, src, tmp, problems):
    npufuse = Path(args.npufuse).resolve()
    work = tmp / "pkg"
    work.mkdir()
    (work / "modeling_pack.py").write_text(PACKAGE_MODEL)
    (work / "config.json").write_text(json.dumps({"hidden_size": 256, "num_attention_heads": 4, "head_dim": 64,
                                                  "qk_rope_head_dim": 64, "torch_dtype": "bfloat16"}))
    r = run([npufuse, "analyze", "modeling_pack.py", "--config", "config.json", "--format", "json", "-o", "plan.json"],
            cwd=work)
    if r.returncode != 0:
        sys.exit(f"npufuse analyze failed: {r.stderr}")
    r = run([npufuse, "apply", "modeling_pack.py", "--plan", "plan.json", "--out", "out", "--verify"], cwd=work)
    print(r.stdout[-2000:], r.stderr[-2000:], end="")
    report = json.loads((work / "out" / "report.json").read_text())
    seen = {c["id"].split("@")[0]: c for c in report["candidates"]}
    norm, rope = seen.get("norm.rms_norm"), seen.get("rope.rope_deinterleave_half")
    if not norm or not rope:
        problems.append(f"expected rms_norm and rope_deinterleave_half, got {sorted(seen)}")
        return
    if norm["status"] != "kept":
        problems.append(f"{norm['id']}: {norm['status']}: {norm.get('conclusion')}")
    # The rope rewrite is checked by its rule cut only and the model cannot be
    # built (no entry): nothing ran its lines, so it is not kept on the rule's word.
    if rope["status"] != "not_exercised" or "rule verified, patch not exercised" not in rope.get("conclusion", ""):
        problems.append(f"{rope['id']}: expected not_exercised: {rope['status']}: {rope.get('conclusion')}")
    norm_check = norm.get("precision") or {}
    if not str(norm_check.get("cut", "")).startswith("function PackNorm.forward"):
        problems.append(f"rms_norm not checked through the user's function: {norm_check.get('cut')!r}")
    if "loaded with stand-ins for the imports this machine cannot resolve" not in str(norm_check.get("cut_note")):
        problems.append(f"rms_norm's cut note does not say the imports were stood in for: {norm_check.get('cut_note')!r}")
    rope_check = rope.get("precision") or {}
    if not str(rope_check.get("cut", "")).startswith("rule "):
        problems.append(f"rope checked through pairs_rope, whose cos is not the bound value: {rope_check.get('cut')!r}")
    if "is bound to the value pairs_rope makes at" not in str(rope_check.get("cut_note")):
        problems.append(f"rope's cut note does not say why: {rope_check.get('cut_note')!r}")


def case_killed(args, src, tmp, problems):
    """The whole model cannot be built here (the process building it is killed, as the
    kernel's out-of-memory killer does with a full-size config on a small machine): the
    candidates are judged by their harnesses, each says the model check was skipped and
    why, and the model is not built again for every candidate."""
    model = tmp / "model"
    model.mkdir()
    text = (src / "tests" / "models" / "llama_like" / "model.py").read_text()
    entry = "def from_config(values: dict) -> LlamaForCausalLM:\n"
    if entry not in text:
        sys.exit("llama_like's from_config is not where this test expects it")
    # The model check is the only caller of from_config; the marker counts its runs.
    text = text.replace(entry, entry + "    open(__file__ + '.built', 'a').write('x')\n"
                                       "    os.kill(os.getpid(), 9)\n")
    (model / "model.py").write_text("import os\n" + text)
    shutil.copy(src / "tests" / "models" / "llama_like" / "config.json", model / "config.json")
    plan = tmp / "plan.json"
    analyze(args.npufuse, model, plan)
    out = tmp / "out"
    r = run([args.npufuse, "apply", model / "model.py", "--plan", plan, "--verify", "--out", out])
    print(r.stdout[-3000:], r.stderr[-1500:], sep="\n")
    report = json.loads((out / "report.json").read_text())
    kept = [c for c in report["candidates"] if c["status"] == "kept"]
    rolled = [c for c in report["candidates"] if c["status"] == "rolled_back"]
    if not kept or rolled:
        problems.append(f"expected the candidates kept on their harnesses: kept {len(kept)}, rolled back {len(rolled)}")
    for c in kept:
        skipped = (c.get("model_check") or {}).get("skipped") or ""
        if "killed by signal 9" not in skipped or "config.tiny.json" not in skipped:
            problems.append(f"{c['id']}: the model check does not say it could not run and what to do: {skipped!r}")
    whole = (report.get("model_check") or {}).get("skipped") or ""
    if "killed by signal 9" not in whole:
        problems.append(f"the whole-model line does not say why it was not checked: {whole!r}")
    builds = (model / "model.py.built")
    if builds.exists() and len(builds.read_text()) != 1:
        problems.append(f"the model was built {len(builds.read_text())} times, expected once")
    md = (out / "report.md").read_text()
    if "model check skipped: building and running the whole model" not in md:
        problems.append("report.md does not say the model check was skipped")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npufuse", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--case", required=True, choices=("llama", "wrong", "alternative", "relative", "models", "killed", "package"))
    ap.add_argument("--model", default="")
    args = ap.parse_args()
    src = Path(args.source_dir).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="npufuse_verify_"))
    problems = []
    try:
        {"llama": case_llama, "wrong": case_wrong, "alternative": case_alternative,
         "relative": case_relative, "models": case_models, "killed": case_killed,
         "package": case_package}[args.case](args, src, tmp, problems)
    finally:
        if not os.environ.get("NPUFUSE_KEEP_TMP"):
            shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
