"""A plan's candidates found again whatever path form the user gives later.

Candidate ids embed each file as analyze was given it. Through the CLI, on a
copy of llama_like:
1. analyze with an absolute path, then apply, verify (of apply's folder),
   apply --verify and explain from the model's folder with a relative one:
   the same candidates are applied (the plan's ids), none is lost to a
   "manual" row, an id may be spelt with either path, and the report shows
   real numbers;
2. the same through a symlinked folder, and with analyze run from the
   parent folder (`m/model.py`) while apply and apply --verify run inside it
   (`model.py`; the loop's model check finds the plan's config from there);
3. output folders that do not exist yet are made: analyze -o, apply --out,
   apply --diff, apply --verify --out;
4. a file changed since analyze: apply, verify and apply --verify stop with
   exit 2, naming the file (in any spelling); explain says so and gives no
   fix preview (docs/explain.md).

Usage: check_plan_paths.py --npufuse BIN --source-dir DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def run(cmd, cwd):
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True)


def applied(stdout):
    return sorted(line[len("applied: "):] for line in stdout.splitlines() if line.startswith("applied: "))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npufuse", required=True)
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    npufuse = Path(args.npufuse).resolve()
    src = Path(args.source_dir).resolve()
    problems = []
    tmp = Path(tempfile.mkdtemp(prefix="npufuse_plan_paths_")).resolve()
    env_python = src / "python"
    try:
        model_dir = tmp / "m"
        shutil.copytree(src / "tests" / "models" / "llama_like", model_dir)
        model = model_dir / "model.py"

        # The reference: analyze and apply with one spelling.
        plan = tmp / "plan_abs.json"
        r = run([npufuse, "analyze", model, "--config", model_dir / "config.json", "--format", "json", "-o", plan], tmp)
        if r.returncode != 0:
            sys.exit(f"analyze failed: {r.stderr}")
        ids = [c["id"] for c in json.loads(plan.read_text())["candidates"]]
        if not all(f"@{model}:" in i for i in ids if "@" in i):
            problems.append(f"the plan's ids do not spell the file as analyze was given it: {ids}")
        r = run([npufuse, "apply", model, "--plan", plan, "--out", tmp / "same"], tmp)
        want = applied(r.stdout)
        if r.returncode != 0 or not want:
            sys.exit(f"apply with the analyze spelling failed: {r.stdout}{r.stderr}")

        # 1. Relative from the model's folder.
        r = run([npufuse, "apply", "model.py", "--plan", plan, "--out", "rel_out"], model_dir)
        if r.returncode != 0 or applied(r.stdout) != want:
            problems.append(f"relative apply: exit {r.returncode}, applied {applied(r.stdout)}, want {want}: {r.stderr}")
        if "does not produce" in r.stdout or "not found when" in r.stderr:
            problems.append(f"relative apply lost candidates: {r.stdout}{r.stderr}")
        norm = next(i for i in want if i.startswith("norm.rms_norm@"))
        short = norm.replace(str(model), "model.py")
        r = run([npufuse, "apply", "model.py", "--plan", plan, "--only", short, "--diff", "-"], model_dir)
        if r.returncode != 0 or applied(r.stderr) != [norm]:
            problems.append(f"--only {short} (the plan spells it {norm}): exit {r.returncode}, {r.stderr}")
        r = run([npufuse, "explain", short, "--plan", plan, "--format", "json"], model_dir)
        if r.returncode != 0 or json.loads(r.stdout or "{}").get("candidate", {}).get("id") != norm:
            problems.append(f"explain {short}: exit {r.returncode}: {r.stdout[:300]}{r.stderr}")
        # verify of the relative apply's folder, and the loop, one candidate each (fast).
        r = run([npufuse, "apply", "model.py", "--plan", plan, "--only", short, "--out", "one"], model_dir)
        r = run([npufuse, "verify", "one", "--device", "cpu", "--format", "json", "--python-dir", env_python], model_dir)
        report = model_dir / "one" / "verify" / "report.json"
        if r.returncode != 0 or not report.exists():
            problems.append(f"verify of the relative apply: exit {r.returncode}: {r.stderr[-1500:]}")
        else:
            c = json.loads(report.read_text())["candidates"]
            if [x["id"] for x in c] != [norm] or c[0]["status"] != "passed":
                problems.append(f"verify of the relative apply: {[(x['id'], x['status'], x['conclusion']) for x in c]}")
        # 3. with a folder that does not exist yet
        r = run([npufuse, "apply", "model.py", "--plan", plan, "--only", short, "--verify", "--out", "new/pv"], model_dir)
        report = model_dir / "new" / "pv" / "report.json"
        if r.returncode != 0 or not report.exists():
            problems.append(f"apply --verify --out new/pv: exit {r.returncode}: {r.stderr[-1500:]}")
        else:
            c = json.loads(report.read_text())["candidates"]
            if [x["status"] for x in c] != ["kept"] or "OUT OF TOLERANCE" in (model_dir / "new" / "pv" / "report.md").read_text():
                problems.append(f"apply --verify, relative: {[(x['id'], x['status'], x['conclusion']) for x in c]}")
        r = run([npufuse, "analyze", "model.py", "--config", "config.json", "--format", "json", "-o", "deep/er/plan.json"],
                model_dir)
        if r.returncode != 0 or not (model_dir / "deep" / "er" / "plan.json").exists():
            problems.append(f"analyze -o deep/er/plan.json: exit {r.returncode}: {r.stderr}")
        r = run([npufuse, "apply", "model.py", "--plan", plan, "--diff", "patches/x/patch.diff"], model_dir)
        if r.returncode != 0 or not (model_dir / "patches" / "x" / "patch.diff").exists():
            problems.append(f"apply --diff patches/x/patch.diff: exit {r.returncode}: {r.stderr}")

        # 2. Through a symlinked folder, and analyze from the parent folder.
        link = tmp / "link"
        os.symlink(model_dir, link)
        plan_link = tmp / "plan_link.json"
        r = run([npufuse, "analyze", link / "model.py", "--config", link / "config.json", "--format", "json", "-o",
                 plan_link], tmp)
        r = run([npufuse, "apply", model, "--plan", plan_link, "--out", tmp / "via_real"], tmp)
        want_link = [i.replace(str(model), str(link / "model.py")) for i in want]
        if r.returncode != 0 or applied(r.stdout) != want_link:
            problems.append(f"plan through a symlink, applied through the real path: {r.stdout[-800:]}{r.stderr}")
        plan_rel = tmp / "plan_rel.json"
        r = run([npufuse, "analyze", "m/model.py", "--config", "m/config.json", "--format", "json", "-o", plan_rel], tmp)
        r = run([npufuse, "apply", "model.py", "--plan", plan_rel, "--out", "from_inside"], model_dir)
        want_rel = [i.replace(str(model), "m/model.py") for i in want]
        if r.returncode != 0 or applied(r.stdout) != want_rel:
            problems.append(f"analyze from the parent, apply inside: exit {r.returncode}: {r.stdout[-800:]}{r.stderr}")
        # the loop's model check builds the model from the plan's config (m/config.json), found from here too
        r = run([npufuse, "apply", "model.py", "--plan", plan_rel, "--only", short, "--verify", "--out", "inside_pv"],
                model_dir)
        report = model_dir / "inside_pv" / "report.json"
        c = json.loads(report.read_text())["candidates"] if report.exists() else []
        if r.returncode != 0 or [x["status"] for x in c] != ["kept"] or not (c[0].get("model_check") or {}).get("passed"):
            problems.append(f"apply --verify inside, plan from the parent: exit {r.returncode}: "
                            f"{[(x['id'], x['status'], x['conclusion']) for x in c]} {r.stderr[-800:]}")

        # 4. A file changed since: an error naming it, whatever the spelling.
        model.write_text(model.read_text() + "\n# edited\n")
        for what, cmd in (("apply", ["apply", "model.py", "--plan", plan, "--out", "stale"]),
                          ("verify", ["verify", plan, "--out", "stale_v", "--python-dir", env_python]),
                          ("apply --verify", ["apply", "model.py", "--plan", plan, "--verify", "--out", "stale_pv"])):
            r = run([npufuse] + cmd, model_dir)
            if r.returncode != 2 or "model.py" not in r.stderr or "changed since" not in r.stderr:
                problems.append(f"{what} of a changed file: exit {r.returncode}: {r.stdout[-500:]}{r.stderr[-500:]}")
        r = run([npufuse, "explain", short, "--plan", plan], model_dir)
        if "stale plan" not in r.stderr or "changed since" not in r.stderr:
            problems.append(f"explain of a changed file does not say so: {r.stderr}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
