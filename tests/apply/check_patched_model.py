"""`npufuse apply` on a test model, checked from the outside.

1. analyze -> plan.json, apply -> patched copy + diff (the chosen fusions must
   be applied: a run that rewrote nothing would compare a model with itself);
2. the patched file parses (npufuse parse) and the diff passes `git apply
   --check` in a scratch repository and gives the patched bytes;
3. with the CPU stand-in torch_npu, the patched model given the original's
   random weights computes the same logits, with and without the KV cache
   (the weights are loaded through load_state_dict, so the hook that merges
   gate_proj and up_proj into gate_up_proj is exercised);
4. a deliberately wrong torch_npu.npu_rms_norm (epsilon off by 1e4) makes the
   comparison fail, so step 3 can catch a wrong replacement.

Usage: check_patched_model.py --npufuse BIN --source-dir DIR [--model llama_like]
"""
import argparse
import importlib.util
import json
import os
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
    for fn in ("full_logits", "incremental_logits"):
        args = (ids,) if fn == "full_logits" else (ids, 6)
        x = getattr(original, fn)(a, *args)
        y = getattr(patched, fn)(b, *args)
        worst = max(worst, float((x - y).abs().max()))
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npufuse", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--model", default="llama_like")
    args = ap.parse_args()
    src = Path(args.source_dir)
    model_dir = src / "tests" / "models" / args.model
    problems = []
    tmp = Path(tempfile.mkdtemp(prefix="npufuse_apply_check_"))
    try:
        plan = tmp / "plan.json"
        r = run([args.npufuse, "analyze", str(model_dir / "model.py"), "--config", str(model_dir / "config.json"),
                 "--format", "json", "-o", str(plan)])
        if r.returncode != 0:
            sys.exit(f"analyze failed: {r.stderr}")
        out = tmp / "out"
        r = run([args.npufuse, "apply", str(model_dir / "model.py"), "--plan", str(plan), "--out", str(out),
                 "--diff", str(tmp / "patch.diff")])
        print(r.stdout, end="")
        if r.returncode != 0:
            sys.exit(f"apply failed: {r.stderr}")
        for rule in ("norm.rms_norm@", "rope.rope_half@", "ffn.swiglu@"):
            if f"applied: {rule}" not in r.stdout:
                problems.append(f"{rule} was not applied")
        patched_py = out / "model.py"
        text = patched_py.read_text()
        if text.count("import torch_npu\n") != 1:
            problems.append("import torch_npu is not there exactly once")

        r = run([args.npufuse, "parse", str(patched_py)])
        if r.returncode != 0:
            problems.append(f"patched file does not parse: {r.stderr}")

        repo = tmp / "repo"
        repo.mkdir()
        shutil.copy(model_dir / "model.py", repo / "model.py")
        r = run(["git", "init", "-q", "."], cwd=repo)
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
        if not getattr(torch_npu, "IS_NPUFUSE_STANDIN", False):
            print("a real torch_npu is installed: the CPU comparison is skipped")
            return 1 if problems else 0
        config = json.loads((model_dir / "config.tiny.json").read_text())
        # npu_apply_rotary_pos_emb takes head_dim 64 or 128 only.
        config.update(hidden_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=64)
        original = load_module(model_dir / "model.py", "original_model")
        patched = load_module(patched_py, "patched_model")
        worst = max_difference(original, patched, config)
        print(f"max |logits difference| patched vs original: {worst:.3g} (tolerance {TOLERANCE})")
        if not worst <= TOLERANCE:
            problems.append(f"patched logits differ by {worst:.3g} > {TOLERANCE}")

        right = torch_npu.npu_rms_norm
        torch_npu.npu_rms_norm = lambda x, w, epsilon=1e-6: right(x, w, epsilon=epsilon * 1e4)
        try:
            wrong = max_difference(original, patched, config)
        finally:
            torch_npu.npu_rms_norm = right
        print(f"with a wrong npu_rms_norm: {wrong:.3g}")
        if wrong <= TOLERANCE:
            problems.append("a wrong npu_rms_norm went unnoticed: the comparison cannot fail")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
