#!/usr/bin/env python3
"""Re-check ports.json against local git mirrors of the expert repositories.

Every op's evidence line (and each also_at line) must name the op's API at the
recorded commit; a moved or mistyped line number fails the check.

usage: check_evidence.py ports.json OWNER/NAME=GIT_DIR [OWNER/NAME=GIT_DIR ...]
  e.g. hicann/cann-recipes-infer=/path/to/cann-recipes-infer/.git
Ports whose repository has no mirror given are skipped and reported.
"""
import json
import subprocess
import sys


def read_lines(git_dir, commit, path, cache):
    key = (git_dir, commit, path)
    if key not in cache:
        shown = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
                               capture_output=True, text=True)
        cache[key] = shown.stdout.split("\n") if shown.returncode == 0 else None
    return cache[key]


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    mirrors = dict(arg.split("=", 1) for arg in argv[2:])
    doc = json.load(open(argv[1]))
    cache, failures, checked, skipped = {}, [], 0, set()
    for port in doc["ports"]:
        git_dir = mirrors.get(port["repo"])
        if git_dir is None:
            skipped.add(port["repo"])
            continue
        for op in port["ops"]:
            for where in [op["evidence"]] + op.get("also_at", []):
                path, line = where.rsplit(":", 1)
                lines = read_lines(git_dir, port["commit"], path, cache)
                checked += 1
                if lines is None:
                    failures.append(f"{port['port']}: {path} missing at {port['commit'][:8]}")
                elif op["api"] not in lines[int(line) - 1]:
                    failures.append(f"{port['port']}: {where} does not call {op['api']}")
    for failure in failures:
        print("FAIL", failure)
    for repo in sorted(skipped):
        print("skipped (no mirror):", repo)
    print(f"{checked - len(failures)}/{checked} evidence lines confirmed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
