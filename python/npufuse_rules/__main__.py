"""Prints the numeric comparison of every rule: python3 -m npufuse_rules [RULE_ID_PREFIX].

One line per (rule, search alternative, dtype, output) with max abs error, max relative
error and cosine similarity against the rule's replacement, then one line per rejected
(naive) mapping with the same numbers, so the evidence behind each rule can be read.
"""
import sys

import torch

from . import (build_inputs, clone_inputs, compare_outputs, discover_rule_files, exact_outputs, in_replacement_layout,
               load_rule, check_dtype)


def _rows(loaded):
    rule = loaded.rule
    if loaded.replace is not None:
        for dtype_name in rule.get("dtypes", ["float32", "bfloat16"]):
            inputs = build_inputs(rule, getattr(torch, dtype_name), seed=1234)
            candidate = loaded.replace(**clone_inputs(inputs))
            for name, search in loaded.searches.items():
                try:
                    reference = in_replacement_layout(rule, search(**clone_inputs(inputs)), inputs)
                except (AttributeError, TypeError) as err:  # API missing from this torch
                    yield f"{rule['id']:38} {name:28} {dtype_name:9} skipped: {err}"
                    continue
                exact = exact_outputs(rule, search, clone_inputs(inputs))
                for c in compare_outputs(reference, candidate, rule.get("tolerance"), exact):
                    yield (f"{rule['id']:38} {name:28} {dtype_name:9} {'ok ' if c.ok else 'BAD'} "
                           + c.describe())
    if loaded.naives:
        dtype = check_dtype(rule)
        inputs = build_inputs(rule, dtype, seed=4321)
        reference = in_replacement_layout(rule, next(iter(loaded.searches.values()))(**clone_inputs(inputs)), inputs)
        for name, naive in loaded.naives.items():
            try:
                result = compare_outputs(reference, naive(**clone_inputs(inputs)), rule.get("tolerance"))
                worst = max(result, key=lambda c: c.max_abs)
                verdict = "rejected" if not all(c.ok for c in result) else "NOT DISTINGUISHED"
                yield f"{rule['id']:38} {name:28} {str(dtype)[6:]:9} {verdict}: {worst.describe()}"
            except (ValueError, RuntimeError) as err:
                yield f"{rule['id']:38} {name:28} {str(dtype)[6:]:9} rejected by the operator: {str(err)[:90]}"


def main(argv):
    prefix = argv[1] if len(argv) > 1 else ""
    for path in discover_rule_files():
        loaded = load_rule(path)
        if loaded.id.startswith(prefix):
            for row in _rows(loaded):
                print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
