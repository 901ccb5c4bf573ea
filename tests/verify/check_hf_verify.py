#!/usr/bin/env python3
"""`apply --verify` on a HuggingFace model taken from the pinned transformers, as a user runs it.

    check_hf_verify.py --npufuse build/npufuse --python build/venv/bin/python --model llama

1. tools/export_configs.py writes the model's config.json from its own config class;
2. `npufuse analyze <installed modeling_<m>.py> --config ... --format json -o plan.json`;
3. `npufuse apply <same path> --plan plan.json --verify --out OUT --python VENV`, then the
   report is read: the whole-model check ran through the `transformers` entry (prefill,
   decode steps, padded batch) and passed on the kept set; every kept candidate's changed
   lines ran in a passing check; at least one candidate was kept;
4. the same with `NPUFUSE_WRONG_OPERATOR` naming the first kept candidate's operator and
   `--only` that candidate: it must be rolled back, its model check failing with numbers.

Exit 0 when all holds; prints what it saw either way.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(argv, env=None, expect=(0, 1)):
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if proc.returncode not in expect:
        sys.stdout.write(proc.stdout[-4000:])
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"{' '.join(argv[:3])}...: exit {proc.returncode}")
    return proc


def stages(check):
    return [r["stage"] for r in (check or {}).get("rows", [])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npufuse", required=True)
    ap.add_argument("--python", required=True, help="the venv's Python (torch 2.x and transformers)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--keep", default=None, help="leave the work folder here")
    args = ap.parse_args()
    problems = []
    work = args.keep or tempfile.mkdtemp(prefix=f"npufuse-hf-{args.model}-")
    os.makedirs(work, exist_ok=True)
    zoo = os.path.join(work, "zoo")
    run([args.python, os.path.join(ROOT, "tools", "export_configs.py"), "--out", zoo, "--models", args.model])
    folder = os.path.join(zoo, args.model)
    modeling = os.path.realpath(next(os.path.join(folder, f) for f in os.listdir(folder) if f.startswith("modeling_")))
    config = os.path.join(folder, "config.json")
    plan = os.path.join(work, "plan.json")
    run([args.npufuse, "analyze", modeling, "--config", config, "--format", "json", "-o", plan])

    out = os.path.join(work, "out")
    run([args.npufuse, "apply", modeling, "--plan", plan, "--verify", "--out", out, "--python", args.python])
    with open(os.path.join(out, "report.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    final = report.get("model_check") or {}
    print(f"{args.model}: whole model: entry {final.get('entry')}, passed {final.get('passed')}, "
          f"skipped {final.get('skipped')}, error {final.get('error')}")
    for row in final.get("rows", []):
        print(f"  {row['stage']}: max abs {row['max_abs']}, cosine {row['cosine']}")
    for c in report["candidates"]:
        print(f"  {c['status']:14} {c['id']}: {(c['exercised'] or {}).get('by')}")
    kept = [c for c in report["candidates"] if c["status"] == "kept"]
    if final.get("entry") != "transformers":
        problems.append(f"the whole-model check did not run through the transformers entry: {final}")
    if stages(final) != ["prefill", "prefill+3 decode steps", "left-padded batch"] and \
            stages(final) != ["prefill", "prefill+3 decode steps"]:
        problems.append(f"unexpected model-check rows {stages(final)}")
    if not final.get("passed"):
        problems.append("the kept set's whole-model check did not pass")
    if not kept:
        problems.append("no candidate was kept")
    for c in kept:
        ex = c.get("exercised") or {}
        if not ex.get("by") or ex.get("not_run"):
            problems.append(f"{c['id']} is kept without its changed lines running: {ex}")
        if not c.get("model_check") or c["model_check"].get("skipped"):
            problems.append(f"{c['id']}: kept without a model check")

    # A candidate the plan lists on its own (not one tried in another's place),
    # so `--only` runs exactly it.
    alternatives = {a["id"] for c in report["candidates"] for a in c.get("alternatives", [])}
    # One whose lines the model check ran: a candidate kept on its function cut
    # alone sits on a path this config does not take (DeepSeek-V3's plain RoPE
    # beside the interleaved one it runs).
    by_model = [c for c in kept if c["apis"] and "model check" in ((c.get("exercised") or {}).get("by") or "")]
    fused = [c for c in by_model if c["id"] not in alternatives] or by_model
    if not fused:
        problems.append("no kept candidate that calls a torch_npu operator ran in the model check")
    else:
        victim = fused[0]
        op = victim["apis"][0].split(".")[-1]
        env = dict(os.environ, NPUFUSE_WRONG_OPERATOR=op)
        wrong_out = os.path.join(work, "out-wrong")
        run([args.npufuse, "apply", modeling, "--plan", plan, "--verify", "--out", wrong_out, "--python",
             args.python, "--only", victim["id"]], env=env)
        with open(os.path.join(wrong_out, "report.json"), encoding="utf-8") as handle:
            wrong = json.load(handle)
        verdict = next(c for c in wrong["candidates"] if c["id"] == victim["id"])
        mc = verdict.get("model_check") or {}
        worst = max((r["max_abs"] or float("inf") for r in mc.get("rows", [])), default=None)
        print(f"with a wrong {op}: {verdict['status']}: model check passed {mc.get('passed')}, max abs {worst}")
        if verdict["status"] != "rolled_back":
            problems.append(f"a wrong {op} left {victim['id']} {verdict['status']}")
        if mc.get("passed") is not False or not mc.get("rows"):
            problems.append(f"a wrong {op} was not caught by the model check: {mc}")
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
