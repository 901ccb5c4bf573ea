"""`npufuse rules show --json ID` for every rule against what python/npufuse_rules reads.

The C++ tool reads rule files with its own parser; the verifier imports them. Both must
see the same metadata, the same documentation sections, the same functions and the same
replacement source, or the rule that is matched is not the rule that is verified.

usage: compare_with_python.py --npufuse BINARY [--rules DIR]
"""
import argparse
import ast
import inspect
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

from npufuse_rules import discover_rule_files, load_rule  # noqa: E402

HEADINGS = {"en": ["What it does", "Why", "Example", "Use instead", "Fix safety", "References"],
            "zh": ["功能", "原因", "示例", "替代写法", "修复安全性", "参考"]}


def sections(text, headings):
    """Summary and (heading, dedented body) pairs, the format rules/README.md describes."""
    lines = inspect.cleandoc(text).splitlines()
    found, current = [], None
    for line in lines[1:]:
        name = line.strip().rstrip(":")
        if line.strip() and not line[0].isspace() and name in headings:
            current = [name, []]
            found.append(current)
        elif current is not None:
            current[1].append(line.rstrip())
    out = []
    for name, body in found:
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        margin = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
        out.append({"heading": name, "body": "\n".join(b[margin:] if b.strip() else "" for b in body)})
    return {"summary": lines[0].strip() if lines else "", "sections": out}


def expected(loaded):
    rule = loaded.literal
    source = open(loaded.path, encoding="utf-8").read()
    functions = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
    hints = rule.get("hints", {})
    return {
        "id": rule["id"],
        "title": rule["title"],
        "module": rule["module"],
        "safety": rule["safety"],
        "apis": rule["apis"],
        "stages": rule["stages"],
        "prerequisites": [dict({"id": p["id"], "en": p["en"], "zh": p["zh"], "mechanical": p.get("mechanical", False)},
                               **({"seam": p["seam"]} if "seam" in p else {}))
                          for p in rule["prerequisites"]],
        "checks": rule["checks"],
        "facts": rule["facts"],
        "when": rule.get("when"),
        "operand_facts": rule.get("operand_facts", {}),
        "rejects": [{"api": r["api"], "en": r["en"], "zh": r["zh"], "needs": r.get("needs", ""),
                     **({"spares": r["spares"]} if r.get("spares") else {})}
                    for r in rule.get("rejects", [])],
        "hints": {"class_names": hints.get("class_names", []), "hub_kernels": hints.get("hub_kernels", [])},
        "near_misses": rule["near_misses"],
        "match": rule.get("match", {}),
        "numeric_check": {k: rule[k] for k in ("inputs", "sizes", "dtypes", "tolerance", "min_torch", "deinterleaved_returns", "absorbed_returns") if k in rule},
        "doc": {"en": sections(loaded.docstring, HEADINGS["en"]), "zh": sections(rule["doc_zh"], HEADINGS["zh"])},
        # The verifier runs these by name; the matcher compiles the same functions.
        "search": sorted(loaded.searches),
        "naive": sorted(loaded.naives),
        "replace_source": inspect.getsource(loaded.replace).rstrip(),
        "replace_line": next(f.lineno for f in functions if f.name == "replace"),
    }


def actual(shown):
    out = {k: shown[k] for k in ("id", "title", "module", "safety", "apis", "stages", "prerequisites", "checks",
                                 "facts", "when", "operand_facts", "rejects", "hints", "near_misses", "match", "numeric_check", "doc")}
    out["search"] = sorted(f["name"] for f in shown["functions"]["search"])
    out["naive"] = sorted(f["name"] for f in shown["functions"]["naive"])
    out["replace_source"] = shown["functions"]["replace"]["source"].rstrip()
    out["replace_line"] = shown["functions"]["replace"]["line"]
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--npufuse", required=True)
    parser.add_argument("--rules", help="rules directory (default: the embedded copy, compared with rules/)")
    args = parser.parse_args()
    root = args.rules or os.path.join(ROOT, "rules")
    paths = discover_rule_files(root)
    if not paths:
        print(f"no rule files under {root}")
        return 1
    failures = 0
    for path in paths:
        loaded = load_rule(path)
        command = [args.npufuse, "rules", "--json"] + (["--rules", args.rules] if args.rules else []) + ["show", loaded.id]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"FAIL {loaded.id}: {' '.join(command)} exited {run.returncode}\n{run.stderr}")
            failures += 1
            continue
        want, got = expected(loaded), actual(json.loads(run.stdout))
        differing = [k for k in want if json.dumps(want[k], sort_keys=True) != json.dumps(got[k], sort_keys=True)]
        for key in differing:
            print(f"FAIL {loaded.id} {key}:\n  python: {json.dumps(want[key], ensure_ascii=False)[:600]}\n"
                  f"  npufuse: {json.dumps(got[key], ensure_ascii=False)[:600]}")
        failures += bool(differing)
        if not differing:
            print(f"ok   {loaded.id}")
    print(f"{len(paths) - failures} of {len(paths)} rules read the same by npufuse and python/npufuse_rules")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
