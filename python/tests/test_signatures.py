"""Every reference function has the torch_npu prototype recorded in catalog/<family>/<op>.toml.

Names, order, keyword-only markers and defaults must agree so that code written for
torch_npu calls the reference unchanged.
"""
import ast
import glob
import inspect
import os
import re
import unittest

import npufuse_ref

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

CATALOG = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "catalog"))
NOT_IN_CATALOG = {"get_npu_format", "npu_format_cast_"}  # helpers, not fused operators


def parse_default(text):
    """Catalog defaults are Python literals, or integer expressions such as 2^63-1."""
    expr = text.strip().replace("^", "**")
    try:
        return ast.literal_eval(expr)
    except (ValueError, SyntaxError):
        pass
    if re.fullmatch(r"[0-9*+\- ()]+", expr):
        return eval(expr, {"__builtins__": {}})  # arithmetic on integer literals only
    raise ValueError(f"unparsed catalog default {text!r}")


def load_catalog():
    entries = {}
    for path in glob.glob(os.path.join(CATALOG, "*", "*.toml")):
        with open(path, "rb") as f:
            data = tomllib.load(f)
        if "name" in data:
            entries[data["name"]] = (path, data)
    return entries


@unittest.skipIf(tomllib is None or not os.path.isdir(CATALOG), "needs tomllib and the catalog")
class PrototypesMatchCatalog(unittest.TestCase):
    def test_every_operator_matches_its_catalog_prototype(self):
        catalog = load_catalog()
        for name, fn in sorted(npufuse_ref.OPS.items()):
            if name in NOT_IN_CATALOG:
                continue
            with self.subTest(op=name):
                self.assertIn(name, catalog, f"no catalog entry for {name}")
                path, entry = catalog[name]
                want = [(p["name"], bool(p.get("kw_only", False)),
                         parse_default(p["default"]) if "default" in p else inspect.Parameter.empty)
                        for p in entry.get("params", [])]
                got = [(p.name, p.kind == p.KEYWORD_ONLY, p.default)
                       for p in inspect.signature(fn).parameters.values()]
                self.assertEqual(got, want, f"prototype differs from {path}")


class UnmodelledOperatorsSayWhy(unittest.TestCase):
    def test_stubs_raise_not_implemented_naming_the_operator(self):
        import torch
        from npufuse_ref import unmodelled
        t = torch.zeros(1)
        calls = {
            "npu_moe_update_expert": lambda f: f(t, t),
            "npu_top_k_top_p_sample": lambda f: f(t, t, t),
        }
        for name, call in calls.items():
            with self.subTest(op=name), self.assertRaisesRegex(NotImplementedError, name):
                call(getattr(unmodelled, name))


if __name__ == "__main__":
    unittest.main()
