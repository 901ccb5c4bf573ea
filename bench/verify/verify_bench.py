#!/usr/bin/env python3
"""Wall time of `npufuse apply --verify` per model, against one bare model check of the same model.

    build/venv/bin/python bench/verify/verify_bench.py --npufuse build/npufuse \\
        [--models llama,qwen2,qwen3,mixtral,deepseek_v3] [--official PATH/model.py --official-config C]

Per model (HuggingFace files from the installed transformers, configs from their config
classes through tools/export_configs.py; optionally official inference code), in one run:
- `analyze` wall time;
- `apply --verify` wall time, with how many candidates it tried and kept;
- the baseline: one whole-model check of the unpatched file against itself, the fixed
  cost (interpreter, torch and transformers imports, building two small models) that
  every candidate's check pays once;
- the ratio of the two: how many bare model checks the verify loop costs.
A benchmark, not a test: it prints and asserts nothing.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def timed(argv, env=None):
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, proc


def bench_one(npufuse, python, name, modeling, config, work):
    plan = os.path.join(work, f"{name}.plan.json")
    t_analyze, proc = timed([npufuse, "analyze", modeling, "--config", config, "--format", "json", "-o", plan])
    if proc.returncode not in (0, 1):
        return f"{name}: analyze failed ({proc.stderr.strip()[-200:]})"
    check = [python, "-m", "npufuse_verify.model_check", "--original", modeling, "--patched", modeling,
             "--config", config, "--device", "cpu"]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    t_base, proc = timed(check, env)
    base = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {}
    out = os.path.join(work, f"{name}.out")
    t_verify, proc = timed([npufuse, "apply", modeling, "--plan", plan, "--verify", "--out", out, "--python", python])
    try:
        with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
            report = json.load(handle)
    except OSError:
        return f"{name}: apply --verify wrote no report ({proc.stderr.strip()[-200:]})"
    statuses = [c["status"] for c in report["candidates"]]
    kept = statuses.count("kept")
    return (f"{name:12} analyze {t_analyze:6.2f} s | apply --verify {t_verify:7.1f} s, {len(statuses)} tried, "
            f"{kept} kept | baseline model check {t_base:5.1f} s ({base.get('entry', '?')}) | "
            f"ratio {t_verify / max(t_base, 1e-9):5.1f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npufuse", default=os.path.join(ROOT, "build", "npufuse"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--models", default="llama,qwen2,qwen3,mixtral,deepseek_v3")
    ap.add_argument("--official", default=None, help="official inference model.py (DeepSeek-V3 style)")
    ap.add_argument("--official-config", default=None)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="npufuse-verify-bench-")
    zoo = os.path.join(work, "zoo")
    subprocess.run([args.python, os.path.join(ROOT, "tools", "export_configs.py"), "--out", zoo, "--models",
                    args.models], check=True, capture_output=True)
    print(f"verify wall time per model (cores: {os.cpu_count()}, python: {args.python})")
    for name in args.models.split(","):
        folder = os.path.join(zoo, name)
        modeling = os.path.realpath(os.path.join(folder, f"modeling_{name}.py"))
        print(bench_one(args.npufuse, args.python, name, modeling, os.path.join(folder, "config.json"), work),
              flush=True)
    if args.official:
        print(bench_one(args.npufuse, args.python, "official", os.path.abspath(args.official),
                        os.path.abspath(args.official_config), work), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
