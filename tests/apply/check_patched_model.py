"""`npufuse apply` on one test model, checked from the outside.

1. analyze -> plan.json, apply -> patched copy + diff. What apply printed
   (applied, skipped, manual steps) must be exactly the set the model's
   expectation file lists (tests/apply/expected/<model>.json, which may also
   give `analyze_flags`, a deployment such as ["--tp", "8"]), so a rewrite
   that silently stops applying, or a manual step that appears or changes its
   reason, fails the test;
2. the patched file parses (npufuse parse), has `import torch_npu` once when
   anything was applied, and the diff passes `git apply --check` in a scratch
   repository and gives the patched bytes;
3. with the CPU stand-in torch_npu, the patched model given the original's
   random weights (through load_state_dict, so load-time hooks such as the
   gate/up merge run) computes the same logits, for a full forward and for
   prefill plus decode steps, with config.tiny.json plus the expectation's
   `config_overrides`, and again with each of its `config_variants` on top
   (llama_like runs its eager and its SDPA attention);
4. every torch_npu operator the patch calls is made wrong in turn (its first
   floating output scaled): the comparison must then fail, which proves each
   rewritten chain is on the model's path and that step 3 can catch a wrong
   replacement.

Usage: check_patched_model.py --npufuse BIN --source-dir DIR --model NAME
       [--update]   (rewrite the expectation's applied/skipped/manual lists)
"""
import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TOLERANCE = 1e-4  # float32 end to end; see docs/apply.md


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def max_difference(original, patched, config):
    import torch
    torch.manual_seed(0)
    a = original.from_config(config).eval()
    b = patched.from_config(config).eval()
    b.load_state_dict(a.state_dict())
    ids = torch.randint(0, config["vocab_size"], (2, 9), generator=torch.Generator().manual_seed(1))
    worst = 0.0
    with torch.no_grad():
        for fn in ("full_logits", "incremental_logits"):
            args = (ids,) if fn == "full_logits" else (ids, 6)
            x = getattr(original, fn)(a, *args)
            y = getattr(patched, fn)(b, *args)
            worst = max(worst, float((x - y).abs().max()))
    return worst


def ensure_sdpa():
    """torch 1.13 has no F.scaled_dot_product_attention: a model's SDPA path
    (llama_like with attn_implementation "sdpa") then falls back to eager, and
    a rewrite of that path would go unexercised. The check runs both models
    with the documented math of it (additive or boolean mask, is_causal,
    scale; no dropout, the models run in eval)."""
    import math

    import torch
    import torch.nn.functional as F
    if hasattr(F, "scaled_dot_product_attention"):
        return

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
        assert dropout_p == 0.0, "the check runs in eval: no dropout"
        scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
        scores = torch.matmul(query, key.transpose(-2, -1)) * scale
        if is_causal:
            q_len, kv_len = scores.shape[-2], scores.shape[-1]
            scores = scores.masked_fill(torch.ones(q_len, kv_len, dtype=torch.bool).triu(1), float("-inf"))
        if attn_mask is not None:
            scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else scores + attn_mask
        return torch.matmul(scores.softmax(dim=-1), value)

    F.scaled_dot_product_attention = sdpa


def summary_lines(stdout: str, model_prefix: str):
    """apply's summary, paths shown relative to the model directory. A
    prerequisite's manual step keeps its id, not the rule's wording of it."""
    out = []
    for line in stdout.splitlines():
        if line.startswith("wrote:") or line == "nothing applied":
            continue
        line = line.replace(model_prefix, "")
        line = re.sub(r"^(manual: [^ ]+ prerequisite [\w.]+): .* \(([^()]+)\)$", r"\1 (\2)", line)
        # Whether apply ran each rewrite before writing it; its numbers vary by torch.
        line = re.sub(r"^(ran|not run): ([^ ]+): .*$", r"\1: \2", line)
        out.append(line)
    return sorted(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npufuse", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--model", default="llama_like")
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()
    src = Path(args.source_dir).resolve()
    model_rel = Path("tests") / "models" / args.model
    model_dir = src / model_rel
    expect_path = src / "tests" / "apply" / "expected" / f"{args.model}.json"
    expected = json.loads(expect_path.read_text())
    problems = []
    tmp = Path(tempfile.mkdtemp(prefix="npufuse_apply_check_"))
    try:
        plan = tmp / "plan.json"
        r = run([args.npufuse, "analyze", str(model_rel / "model.py"), "--config", str(model_rel / "config.json"),
                 *expected.get("analyze_flags", []), "--format", "json", "-o", str(plan)], cwd=src)
        if r.returncode != 0:
            sys.exit(f"analyze failed: {r.stderr}")
        out = tmp / "out"
        r = run([args.npufuse, "apply", str(model_rel / "model.py"), "--plan", str(plan), "--out", str(out),
                 "--diff", str(tmp / "patch.diff")], cwd=src)
        print(r.stdout, end="")
        if r.returncode != 0:
            sys.exit(f"apply failed: {r.stderr}")
        seen = summary_lines(r.stdout, str(model_rel) + "/")
        if args.update:
            expected["summary"] = seen
            expect_path.write_text(json.dumps(expected, indent=2) + "\n")
        want = sorted(expected["summary"])
        for line in sorted(set(want) - set(seen)):
            problems.append(f"expected but not printed: {line}")
        for line in sorted(set(seen) - set(want)):
            problems.append(f"printed but not expected: {line}")
        applied = [line for line in seen if line.startswith("applied: ")]

        patched_py = out / "model.py"
        text = patched_py.read_text()
        if applied and text.count("import torch_npu\n") != 1:
            problems.append("import torch_npu is not there exactly once")
        r = run([args.npufuse, "parse", str(patched_py)])
        if r.returncode != 0:
            problems.append(f"patched file does not parse: {r.stderr}")

        repo = tmp / "repo"
        repo.mkdir()
        shutil.copy(model_dir / "model.py", repo / "model.py")
        run(["git", "init", "-q", "."], cwd=repo)
        if applied:
            r = run(["git", "apply", "--check", str(tmp / "patch.diff")], cwd=repo)
            if r.returncode != 0:
                problems.append(f"git apply --check refused the diff: {r.stderr}")
            else:
                run(["git", "apply", str(tmp / "patch.diff")], cwd=repo)
                if (repo / "model.py").read_text() != text:
                    problems.append("git apply of the diff does not give the patched copy")

        sys.path.insert(0, str(src / "python" / "torch_npu_standin"))
        sys.path.insert(0, str(src / "python"))
        import torch_npu
        from npufuse_verify.wrong_operator import wrong_version
        if not getattr(torch_npu, "IS_NPUFUSE_STANDIN", False):
            print("a real torch_npu is installed: the CPU comparison is skipped")
            return 1 if problems else 0
        ensure_sdpa()
        config = json.loads((model_dir / "config.tiny.json").read_text())
        config.update(expected.get("config_overrides", {}))
        # Further settings run too, each on top of those (another attention
        # implementation takes another patched path).
        configs = [config] + [dict(config, **variant) for variant in expected.get("config_variants", [])]
        original = load_module(model_dir / "model.py", f"original_{args.model}")
        patched = load_module(patched_py, f"patched_{args.model}")
        for variant in configs:
            worst = max_difference(original, patched, variant)
            changed = {k: v for k, v in variant.items() if config.get(k) != v}
            label = f" with {changed}" if changed else ""
            print(f"max |logits difference| patched vs original{label}: {worst:.3g} (tolerance {TOLERANCE})")
            if not worst <= TOLERANCE:
                problems.append(f"patched logits{label} differ by {worst:.3g} > {TOLERANCE}")

        for op in sorted(set(re.findall(r"torch_npu\.(\w+)\(", text))):
            right = getattr(torch_npu, op)
            setattr(torch_npu, op, wrong_version(right))
            try:
                wrong = max(max_difference(original, patched, variant) for variant in configs)
            finally:
                setattr(torch_npu, op, right)
            print(f"with a wrong {op}: {wrong:.3g}")
            if wrong <= TOLERANCE:
                problems.append(f"a wrong {op} went unnoticed: the rewritten chain is not on the model's path")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
