"""Every rule under rules/: its literal metadata, its catalog references, its fixtures, and
the numbers: each `search*` alternative against `replace`, and each `naive*` (a mapping the
rule rejects) proven wrong. Runs on /usr/bin/python3 with Debian's torch and the stand-in
torch_npu (python/npufuse_ref) when no real torch_npu is installed.
"""
import ast
import glob
import os
import re
import sys
import tomllib
import unittest

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)

import torch  # noqa: E402

from npufuse_rules import (build_inputs, clone_inputs, compare_outputs, exact_outputs, in_replacement_layout,  # noqa: E402
                           discover_rule_files, load_rule, check_dtype, rules_root)

CATALOG_DIR = os.path.join(os.path.dirname(_PYTHON_DIR), "catalog")
MODULES = {"attention", "kv_cache", "rope", "norm", "ffn", "moe_gate", "moe_routing",
           "moe_experts", "mla", "indexer", "quant", "other"}
SAFETY = {"safe", "needs_prerequisites", "display_only"}
STAGES = {"prefill", "decode"}
DOC_SECTIONS_EN = ["What it does", "Why", "Example", "Use instead", "Fix safety", "References"]
DOC_SECTIONS_ZH = ["功能", "原因", "示例", "替代写法", "修复安全性", "参考"]
SEARCH_GLOBALS = {"torch", "F", "math", "int", "float", "len", "range", "enumerate", "zip",
                  "list", "tuple", "min", "max", "sum"}
REQUIRED_KEYS = ["id", "module", "apis", "stages", "safety", "prerequisites", "checks",
                 "facts", "inputs", "sizes", "doc_zh"]


def _catalog_index():
    """api name -> set of constraint ids, from catalog/**/<api>.toml."""
    index = {}
    for path in glob.glob(os.path.join(CATALOG_DIR, "**", "*.toml"), recursive=True):
        if os.path.basename(path) == "facts.toml":
            continue
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
        if "name" in data:
            index[data["name"]] = {c["id"] for c in data.get("constraints", []) if "id" in c}
    return index


def _torch_at_least(version):
    have = tuple(int(p) for p in re.findall(r"\d+", torch.__version__)[:2])
    want = tuple(int(p) for p in re.findall(r"\d+", version)[:2])
    return have >= want


def _sections(text):
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith(" ")
            and line.strip().rstrip(":") in DOC_SECTIONS_EN + DOC_SECTIONS_ZH]


def _describe(comparisons):
    return "; ".join(c.describe() for c in comparisons)


class RuleChecks:
    """The checks of one rule file; a TestCase per rule is made below with `path` set."""
    path = None
    catalog = None

    @classmethod
    def setUpClass(cls):
        cls.loaded = load_rule(cls.path)
        cls.rule = cls.loaded.rule

    def test_rule_is_a_plain_literal(self):
        # The C++ tool reads RULE without executing Python: what it reads must be what runs.
        self.assertEqual(self.loaded.literal, self.rule)
        for key in REQUIRED_KEYS:
            self.assertIn(key, self.rule, f"{self.path}: RULE lacks {key!r}")

    def test_identity_and_classification(self):
        family = os.path.basename(os.path.dirname(self.path))
        stem = os.path.splitext(os.path.basename(self.path))[0]
        self.assertEqual(self.rule["id"], f"{family}.{stem}")
        self.assertIn(self.rule["module"], MODULES)
        self.assertIn(self.rule["safety"], SAFETY)
        self.assertTrue(set(self.rule["stages"]) <= STAGES and self.rule["stages"])
        if self.rule["safety"] == "needs_prerequisites":
            self.assertTrue(self.rule["prerequisites"], "needs_prerequisites without any named")
        for pre in self.rule["prerequisites"]:
            self.assertTrue({"id", "en", "zh", "mechanical"} <= set(pre) <= {"id", "en", "zh", "mechanical", "seam"}, pre)

    def test_apis_and_checks_exist_in_catalog(self):
        named = list(self.rule["apis"]) + [r["api"] for r in self.rule.get("rejects", [])]
        for api in named:
            self.assertIn(api, self.catalog, f"{self.rule['id']}: {api} has no catalog entry")
        for check in self.rule["checks"]:
            api, _, constraint = check.partition(":")
            self.assertIn(api, self.catalog, f"{self.rule['id']}: check {check}")
            if constraint != "*":
                self.assertIn(constraint, self.catalog[api], f"{self.rule['id']}: check {check}")

    def test_every_operator_mentioned_is_catalogued(self):
        # Documentation, rejects and code alike: a torch_npu name that the catalog lacks
        # is either a typo or an operator npufuse knows nothing about.
        with open(self.path, encoding="utf-8") as handle:
            text = handle.read()
        for name in sorted(set(re.findall(r"\bnpu_[a-z0-9_]+", text))):
            self.assertIn(name, self.catalog, f"{self.rule['id']} mentions {name}")

    def test_documentation_sections(self):
        self.assertEqual(_sections(self.loaded.docstring), DOC_SECTIONS_EN, self.path)
        self.assertEqual(_sections(self.rule["doc_zh"]), DOC_SECTIONS_ZH, self.path)

    def test_rejects_are_documented(self):
        for reject in self.rule.get("rejects", []):
            self.assertTrue({"api", "en", "zh", "needs"} <= set(reject), reject)
        if self.rule["safety"] == "display_only":
            self.assertTrue(self.rule.get("rejects") or self.loaded.naives,
                            "a display-only rule says what it rejects")

    def test_functions_share_parameters(self):
        self.assertTrue(self.loaded.searches, "a rule has at least one search function")
        params = list(self.rule["inputs"])
        funcs = dict(self.loaded.searches, **self.loaded.naives)
        if self.loaded.replace is not None:
            funcs["replace"] = self.loaded.replace
        for name, fn in funcs.items():
            code = fn.__code__
            self.assertEqual(list(code.co_varnames[:code.co_argcount]), params,
                             f"{self.rule['id']}.{name} parameters must equal RULE['inputs']")
        for name, fn in self.loaded.lookalikes.items():
            # then only parameters with defaults (a clamp limit the model may hold anywhere)
            code = fn.__code__
            extra = code.co_argcount - len(params)
            self.assertEqual(list(code.co_varnames[:len(params)]), params, f"{self.rule['id']}.{name}")
            self.assertGreaterEqual(len(fn.__defaults__ or ()), extra, f"{self.rule['id']}.{name}: extra parameters need defaults")

    def test_search_functions_are_self_contained(self):
        # A search body is compiled into a dataflow pattern: it may use its parameters,
        # its own locals, torch / F / math and a few builtins, nothing else (no helpers,
        # no torch_npu, no module state).
        tree = ast.parse(open(self.path, encoding="utf-8").read())
        for node in tree.body:
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith(("search", "lookalike"))):
                continue
            bound = {a.arg for a in node.args.args}
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    bound.add(sub.id)
                elif isinstance(sub, ast.arg):
                    bound.add(sub.arg)
            used = {sub.id for sub in ast.walk(node)
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}
            stray = used - bound - SEARCH_GLOBALS
            self.assertFalse(stray, f"{self.rule['id']}.{node.name} uses {sorted(stray)}")

    def test_fixtures(self):
        family_dir = os.path.dirname(self.path)
        stem = os.path.splitext(os.path.basename(self.path))[0]
        fixtures = os.path.join(family_dir, "fixtures")
        matches = sorted(glob.glob(os.path.join(fixtures, f"{stem}_match_*.py")))
        nomatches = sorted(glob.glob(os.path.join(fixtures, f"{stem}_nomatch_*.py")))
        self.assertGreaterEqual(len(matches), 3, f"{self.rule['id']}: at least 3 match styles")
        self.assertGreaterEqual(len(nomatches), 1, f"{self.rule['id']}: at least 1 near-miss")
        for path in matches + nomatches:
            with open(path, encoding="utf-8") as handle:
                source = handle.read()
            ast.parse(source, filename=path)
            first = source.splitlines()[0] if source else ""
            if "_nomatch_" in path:
                self.assertRegex(first, r"^# expect-no-match: \S", path)
            else:
                self.assertEqual(first.strip(), f"# expect-match: {self.rule['id']}", path)
        listed = {os.path.basename(n["file"]): n["reason"] for n in self.rule.get("near_misses", [])}
        self.assertEqual(set(listed), {os.path.basename(p) for p in nomatches},
                         "RULE['near_misses'] lists exactly the nomatch fixtures")
        for path in nomatches:
            # The reason users see is stated once: the fixture header repeats RULE's text.
            with open(path, encoding="utf-8") as handle:
                header = handle.readline().strip()
            self.assertEqual(header, f"# expect-no-match: {listed[os.path.basename(path)]}", path)

    def _dtypes(self):
        return self.rule.get("dtypes", ["float32", "bfloat16"])

    def test_search_alternatives_match_replace(self):
        replace = self.loaded.replace
        if replace is None:
            self.skipTest("display-only rule without a replacement")
        min_torch = self.rule.get("min_torch", {})
        ran = 0
        for dtype_name in self._dtypes():
            dtype = getattr(torch, dtype_name)
            inputs = build_inputs(self.rule, dtype, seed=1234)
            candidate = replace(**clone_inputs(inputs))
            for name, search in self.loaded.searches.items():
                if name in min_torch and not _torch_at_least(min_torch[name]):
                    continue  # e.g. F.rms_norm needs torch 2.4; the matcher still uses it
                with self.subTest(search=name, dtype=dtype_name):
                    ran += 1
                    reference = in_replacement_layout(self.rule, search(**clone_inputs(inputs)), inputs)
                    exact = exact_outputs(self.rule, search, clone_inputs(inputs))
                    result = compare_outputs(reference, candidate, self.rule.get("tolerance"), exact)
                    self.assertTrue(all(c.ok for c in result),
                                    f"{self.rule['id']}.{name} vs replace: {_describe(result)}")
        self.assertGreater(ran, 0, "no search alternative could run here")

    def test_search_and_replace_run_at_verify_sizes(self):
        # `npufuse verify` sets B and S from --batch/--seq (default 1 x 16) and keeps the
        # rule's other sizes: shapes derived from fixed sizes (a cache length) must follow.
        replace = self.loaded.replace
        if replace is None:
            self.skipTest("display-only rule without a replacement")
        rule = dict(self.rule)
        sizes = dict(rule.get("sizes", {}))
        for name, value in (("B", 1), ("S", 16), ("T", 16)):
            if name in sizes:
                sizes[name] = value
        rule["sizes"] = sizes
        inputs = build_inputs(rule, check_dtype(rule), seed=99)
        search_name, search = next(iter(self.loaded.searches.items()))
        if search_name in rule.get("min_torch", {}) and not _torch_at_least(rule["min_torch"][search_name]):
            self.skipTest("the first search alternative needs a newer torch")
        reference = in_replacement_layout(rule, search(**clone_inputs(inputs)), inputs)
        result = compare_outputs(reference, replace(**clone_inputs(inputs)), rule.get("tolerance"))
        self.assertTrue(all(c.ok for c in result), f"{rule['id']} at B=1, S=16: {_describe(result)}")

    def test_naive_mappings_are_wrong(self):
        if not self.loaded.naives:
            self.skipTest("no rejected mapping to disprove")
        search = next(iter(self.loaded.searches.values()))
        inputs = build_inputs(self.rule, check_dtype(self.rule), seed=4321)
        # a rejected mapping calls the same operator, so it is read in the replacement's layout
        reference = in_replacement_layout(self.rule, search(**clone_inputs(inputs)), inputs)
        for name, naive in self.loaded.naives.items():
            with self.subTest(naive=name):
                try:
                    result = naive(**clone_inputs(inputs))
                except (ValueError, RuntimeError):
                    continue  # the operator (or a shape check) refuses the inputs: rejected too
                comparisons = compare_outputs(reference, result, self.rule.get("tolerance"))
                self.assertFalse(all(c.ok for c in comparisons),
                                 f"{self.rule['id']}.{name} should differ: {_describe(comparisons)}")


    def test_lookalikes_compute_something_else(self):
        # A look-alike is told as a near-miss because it is not the chain: the numbers
        # must show it, or the chain's inputs must be ones it cannot take (cos/sin a
        # half-width table where the look-alike needs full width).
        if not self.loaded.lookalikes:
            self.skipTest("no look-alike form")
        search = next(iter(self.loaded.searches.values()))
        inputs = build_inputs(self.rule, torch.float32, seed=4321)
        reference = search(**clone_inputs(inputs))
        listed = self.rule.get("match", {}).get("lookalikes", {})
        for name, lookalike in self.loaded.lookalikes.items():
            with self.subTest(lookalike=name):
                entry = listed.get(name)
                own = entry.get("inputs", {}) if isinstance(entry, dict) else {}
                extra = build_inputs({"inputs": own, "sizes": self.rule.get("sizes", {})}, torch.float32, seed=4321)
                try:
                    result = lookalike(**clone_inputs(inputs), **extra)
                except (ValueError, RuntimeError):
                    continue
                comparisons = compare_outputs(reference, result, self.rule.get("tolerance"))
                self.assertFalse(all(c.ok for c in comparisons),
                                 f"{self.rule['id']}.{name} should differ from the chain: {_describe(comparisons)}")
        self.assertEqual(set(listed), set(self.loaded.lookalikes), "RULE['match']['lookalikes'] lists every look-alike")


def _make_cases():
    catalog = _catalog_index()
    for path in discover_rule_files():
        family = os.path.basename(os.path.dirname(path))
        stem = os.path.splitext(os.path.basename(path))[0]
        name = f"Test_{family}_{stem}"
        globals()[name] = type(name, (RuleChecks, unittest.TestCase),
                               {"path": path, "catalog": catalog})


class RuleSetTest(unittest.TestCase):
    def test_rules_exist(self):
        self.assertTrue(discover_rule_files(), f"no rules under {rules_root()}")

    def test_rule_ids_unique(self):
        ids = [load_rule(p).rule["id"] for p in discover_rule_files()]
        self.assertEqual(len(ids), len(set(ids)))


class InputInitTest(unittest.TestCase):
    def test_causal_topk_positions_are_distinct_and_never_after_their_query(self):
        spec = {"inputs": {"idx": {"shape": ["B", "S", "IK"], "dtype": "int64", "init": "causal_topk",
                                   "high": "START + S"}},
                "sizes": {"B": 2, "S": 4, "IK": 3, "START": 3}}
        idx = build_inputs(spec, torch.float32, seed=7)["idx"]
        self.assertEqual(tuple(idx.shape), (2, 4, 3))
        for b in range(2):
            for i in range(4):
                row = idx[b, i].tolist()
                self.assertEqual(len(set(row)), 3)
                self.assertTrue(all(0 <= p <= 3 + i for p in row), row)

    def test_causal_topk_refuses_more_positions_than_the_first_query_sees(self):
        spec = {"inputs": {"idx": {"shape": ["B", "S", "IK"], "dtype": "int64", "init": "causal_topk",
                                   "high": "START + S"}},
                "sizes": {"B": 1, "S": 4, "IK": 5, "START": 3}}
        with self.assertRaises(ValueError):
            build_inputs(spec, torch.float32, seed=7)


_make_cases()
