#!/usr/bin/env python3
"""Whole-zoo scan: wall time, peak RSS and per-model-file time, against CPython parsing the same files.

    python3 bench/zoo/zoo_bench.py --zoo DIR [--npufuse build/npufuse] [--jobs 2] [--repeat 3]

DIR is a folder of model folders, as tools/export_configs.py writes them from the
installed transformers. In one run it measures:
- `npufuse analyze DIR --no-cache --jobs N`: the whole zoo's wall time (best of
  --repeat) and the scan's peak resident set size;
- `npufuse analyze FOLDER --format json --timings` once per model: the median and
  the 90th percentile wall time per model file (process start included), and the
  median of the analysis alone (the total `--timings` prints, less the one-time
  load of rules, patterns and catalog that a tree scan pays once: the "load"
  stage and the catalog operator files read on demand, "catalog-read");
- the baseline: CPython's `ast.parse` of the same modeling files in this process,
  and the ratio of the zoo scan to it (how many Python parses of the zoo one full
  analysis costs).
Targets (docs/zoo.md): under 10 s for the whole zoo on 2 cores, under 20 ms median
per model file. A benchmark, not a test: it prints and asserts nothing.
"""
import argparse
import ast
import glob
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", required=True)
    ap.add_argument("--npufuse", default=os.path.join(ROOT, "build", "npufuse"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    folders = sorted(d for d in glob.glob(os.path.join(args.zoo, "*")) if os.path.isdir(d))
    files = sorted(f for d in folders for f in glob.glob(os.path.join(d, "*.py")))
    size = sum(os.path.getsize(f) for f in files)

    # Baseline: CPython parses every modeling file, in this process.
    texts = [open(f, encoding="utf-8").read() for f in files]
    best_parse = None
    for _ in range(args.repeat):
        start = time.perf_counter()
        for t in texts:
            ast.parse(t)
        elapsed = time.perf_counter() - start
        best_parse = elapsed if best_parse is None else min(best_parse, elapsed)

    best_scan, peak_kb, failed_line = None, 0, ""
    with tempfile.TemporaryDirectory() as out:
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            start = time.perf_counter()
            p = subprocess.run([args.npufuse, "analyze", args.zoo, "--out", out, "--no-cache", "--no-progress",
                                "--jobs", str(args.jobs)], capture_output=True, text=True)
            elapsed = time.perf_counter() - start
            peak_kb = max(peak_kb, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
            best_scan = elapsed if best_scan is None else min(best_scan, elapsed)
            failed_line = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""

    per_model, analysis = [], []
    for d in folders:
        start = time.perf_counter()
        p = subprocess.run([args.npufuse, "analyze", d, "--format", "json", "--timings"], capture_output=True, text=True)
        per_model.append(time.perf_counter() - start)
        # --timings: "npufuse analyze: <stage> <ms> ms"; the analysis is the total less
        # the one-time load of rules, patterns and catalog (a tree scan pays that once).
        stages = {}
        for line in p.stderr.splitlines():
            parts = line.replace("npufuse analyze:", "").split()
            if len(parts) == 3 and parts[2] == "ms":
                stages[parts[0]] = float(parts[1])
        if "total" in stages and "load" in stages:
            analysis.append((stages["total"] - stages["load"] - stages.get("catalog-read", 0.0)) / 1000.0)
    per_model.sort()
    p90 = per_model[int(0.9 * (len(per_model) - 1))]

    print(f"zoo: {len(folders)} model folders, {len(files)} Python files, {size / 1e6:.1f} MB ({args.zoo})")
    print(f"scan (analyze DIR --no-cache --jobs {args.jobs}), best of {args.repeat}: {best_scan:.2f} s wall, "
          f"peak RSS {peak_kb / 1024:.0f} MiB (target: under 10 s)")
    if failed_line:
        print(f"  scan said: {failed_line}")
    print(f"per model file (analyze FOLDER --format json, one process each): median {statistics.median(per_model) * 1000:.1f} ms, "
          f"p90 {p90 * 1000:.1f} ms, max {per_model[-1] * 1000:.1f} ms (target: median under 20 ms)")
    if analysis:
        print(f"per model file, analysis only (--timings total less the rules/patterns/catalog load): median "
              f"{statistics.median(analysis) * 1000:.1f} ms, max {max(analysis) * 1000:.1f} ms")
    print(f"baseline: CPython {sys.version.split()[0]} ast.parse of the same files in process: {best_parse:.2f} s; "
          f"the zoo scan costs {best_scan / best_parse:.2f}x that")
    return 0


if __name__ == "__main__":
    sys.exit(main())
