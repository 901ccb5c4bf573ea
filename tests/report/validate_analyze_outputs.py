#!/usr/bin/env python3
"""Checks `npufuse analyze` output on every test model against the documented formats.

For each tests/models/<name>/ that has a config.json: the JSON plan must validate
against docs/analyze.schema.json, and the SARIF log must have the structure a
SARIF 2.1.0 viewer relies on. Exit status 1 lists every failure.
"""
import argparse
import json
import pathlib
import subprocess
import sys

import jsonschema


def run_analyze(npufuse, root, model_dir, fmt):
    cmd = [npufuse, "analyze", str(model_dir / "model.py"), "--config", str(model_dir / "config.json"), "--format", fmt]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=root)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def sarif_problems(log, plan):
    """What a SARIF consumer would trip over; the plan gives the expected result count."""
    problems = []
    if log.get("version") != "2.1.0":
        problems.append(f"version is {log.get('version')!r}, not '2.1.0'")
    if "sarif-2.1.0" not in str(log.get("$schema", "")):
        problems.append("$schema does not name SARIF 2.1.0")
    runs = log.get("runs")
    if not isinstance(runs, list) or len(runs) != 1:
        return problems + ["runs is not a list of one run"]
    driver = runs[0].get("tool", {}).get("driver", {})
    if driver.get("name") != "npufuse":
        problems.append("runs[0].tool.driver.name is not 'npufuse'")
    rule_ids = [r.get("id") for r in driver.get("rules", [])]
    results = runs[0].get("results", [])
    if len(results) != len(plan["candidates"]):
        problems.append(f"{len(results)} results for {len(plan['candidates'])} candidates")
    for i, result in enumerate(results):
        where = f"results[{i}]"
        if result.get("level") not in ("note", "warning"):
            problems.append(f"{where}.level is {result.get('level')!r}")
        index = result.get("ruleIndex")
        if not isinstance(index, int) or index >= len(rule_ids) or rule_ids[index] != result.get("ruleId"):
            problems.append(f"{where}.ruleIndex does not point at rule {result.get('ruleId')!r}")
        if not result.get("message", {}).get("text"):
            problems.append(f"{where}.message.text is empty")
        region = result.get("locations", [{}])[0].get("physicalLocation", {}).get("region", {})
        if not isinstance(region.get("startLine"), int) or region["startLine"] < 1:
            problems.append(f"{where} has no region.startLine >= 1")
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--npufuse", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    root = pathlib.Path(args.source_dir)
    schema = json.loads((root / "docs" / "analyze.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    models = sorted(p.parent for p in (root / "tests" / "models").glob("*/config.json"))
    if not models:
        print("no test models with config.json found", file=sys.stderr)
        return 1
    failures = []
    for model in models:
        name = model.name
        try:
            plan = run_analyze(args.npufuse, root, model.relative_to(root), "json")
            for error in validator.iter_errors(plan):
                path = "/".join(str(p) for p in error.absolute_path)
                failures.append(f"{name}: json: {path}: {error.message}")
            log = run_analyze(args.npufuse, root, model.relative_to(root), "sarif")
            failures += [f"{name}: sarif: {p}" for p in sarif_problems(log, plan)]
        except (RuntimeError, json.JSONDecodeError, subprocess.TimeoutExpired) as e:
            failures.append(f"{name}: {e}")
        print(f"{name}: checked", flush=True)
    for f in failures:
        print(f, file=sys.stderr)
    print(f"{len(models)} models, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
