#!/usr/bin/python3
"""Compares `npufuse parse --dump-ast` with CPython's ast.dump on real code.

For every .py file in the corpora, the dump npufuse prints must equal
`ast.dump(ast.parse(source), include_attributes=True)` byte for byte, and a
file CPython rejects must be rejected by npufuse too. Mismatches listed in
exceptions.txt (path relative to its corpus root, then the reason) are
reported but tolerated; any other mismatch makes the run fail.

Also checks the hand-written cases next to this script:
  cases/NAME.py with cases/NAME.dump  -- newer syntax (3.12/3.13) with the
                                         expected dump written by hand;
  reject/NAME.py                      -- invalid input; its first line is
                                         `# error: LINE:COL` (1-based column).

Run with the CPython whose AST is mirrored: /usr/bin/python3 (3.11).
"""
import argparse
import ast
import multiprocessing
import os
import subprocess
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPORA = ["/usr/lib/python3.11", "/usr/lib/python3/dist-packages/torch"]


def cpython_dump(path):
    try:
        with open(path, "rb") as f:
            source = f.read()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source, path)
        return ast.dump(tree, include_attributes=True), None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return None, f"{type(e).__name__}: {e}"


def run_npufuse(npufuse, paths):
    proc = subprocess.run([npufuse, "parse", "--dump-ast", "--null-separated", *paths],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    records = proc.stdout.split(b"\0")
    if len(records) != len(paths) + 1:
        crash = f"npufuse exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-300:]}"
        return [None] * len(paths), crash
    return [r.decode("utf-8", errors="replace") for r in records[:-1]], None


def first_difference(a, b):
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    lo = max(0, i - 60)
    return i, a[lo:i + 60], b[lo:i + 60]


def check_batch(args):
    npufuse, batch = args
    ours, crash = run_npufuse(npufuse, [p for p, _ in batch])
    results = []
    for (path, root), mine in zip(batch, ours):
        expected, error = cpython_dump(path)
        rel = os.path.relpath(path, root)
        if mine is None:
            mine = "!error (npufuse crashed on this batch: " + (crash or "") + ")"
        if expected is None:
            ok = mine.startswith("!error ")
            detail = "" if ok else f"CPython rejects ({error}) but npufuse accepts"
        elif mine.startswith("!error "):
            ok, detail = False, f"npufuse rejects: {mine[7:]}"
        elif mine == expected:
            ok, detail = True, ""
        else:
            pos, theirs, ours_ctx = first_difference(expected, mine)
            ok, detail = False, f"dump differs at char {pos}:\n    cpython: ...{theirs}...\n    npufuse: ...{ours_ctx}..."
        results.append((root, rel, ok, detail))
    return results


def load_exceptions(path):
    listed = {}
    if not os.path.exists(path):
        return listed
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition(" ")
            listed[name] = reason.strip()
    return listed


def check_cases(npufuse):
    failures = []
    cases = os.path.join(HERE, "cases")
    for name in sorted(os.listdir(cases)) if os.path.isdir(cases) else []:
        if not name.endswith(".py"):
            continue
        path = os.path.join(cases, name)
        with open(path[:-3] + ".dump", encoding="utf-8") as f:
            expected = f.read().strip()
        proc = subprocess.run([npufuse, "parse", "--dump-ast", path], capture_output=True, text=True)
        got = proc.stdout.strip()
        if proc.returncode != 0 or got != expected:
            pos, a, b = first_difference(expected, got)
            failures.append(f"cases/{name}: rc={proc.returncode} {proc.stderr.strip()} differs at {pos}:\n"
                            f"    expected: ...{a}...\n    npufuse:  ...{b}...")
    reject = os.path.join(HERE, "reject")
    for name in sorted(os.listdir(reject)) if os.path.isdir(reject) else []:
        if not name.endswith(".py"):
            continue
        path = os.path.join(reject, name)
        with open(path, encoding="utf-8", errors="replace") as f:
            header = f.readline().strip()
        want = header.split("error:", 1)[1].strip() if "error:" in header else ""
        proc = subprocess.run([npufuse, "parse", path], capture_output=True, text=True)
        where = proc.stderr.strip()
        if proc.returncode != 2 or f"{path}:{want}:" not in where:
            failures.append(f"reject/{name}: want exit 2 at {want}, got rc={proc.returncode}: {where}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npufuse", required=True)
    ap.add_argument("--corpus", action="append", help="directory to scan (repeatable)")
    ap.add_argument("--exceptions", default=os.path.join(HERE, "exceptions.txt"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=40)
    args = ap.parse_args()

    corpora = args.corpus or DEFAULT_CORPORA
    batches = []
    counts = {}
    for root in corpora:
        if not os.path.isdir(root):
            print(f"corpus {root}: missing, skipped")
            continue
        files = []
        for d, dirs, names in os.walk(root):
            dirs.sort()
            files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".py")]
        counts[root] = [0, len(files)]
        for i in range(0, len(files), args.batch):
            batches.append((args.npufuse, [(p, root) for p in files[i:i + args.batch]]))

    listed = load_exceptions(args.exceptions)
    unexpected, tolerated = [], []
    with multiprocessing.Pool(args.jobs) as pool:
        for results in pool.imap_unordered(check_batch, batches):
            for root, rel, ok, detail in results:
                if ok:
                    counts[root][0] += 1
                elif rel in listed:
                    tolerated.append((root, rel, listed[rel]))
                else:
                    unexpected.append((root, rel, detail))

    case_failures = check_cases(args.npufuse)
    for root, (passed, total) in counts.items():
        print(f"corpus {root}: {passed}/{total} identical")
    for root, rel, reason in sorted(tolerated):
        print(f"EXCEPTION {root}/{rel}: {reason}")
    for root, rel, detail in sorted(unexpected):
        print(f"FAIL {root}/{rel}: {detail}")
    for f in case_failures:
        print(f"FAIL {f}")
    print(f"{len(unexpected) + len(case_failures)} unexpected failure(s), {len(tolerated)} listed exception(s)")
    return 1 if unexpected or case_failures else 0


if __name__ == "__main__":
    sys.exit(main())
