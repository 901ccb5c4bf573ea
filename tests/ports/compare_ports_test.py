#!/usr/bin/env python3
"""tools/compare_ports.py: found / refused / missed / extra on a fixture plan and
port entry, the stage and `when` filters, the forbidden-API check, and (with
--npufuse) the same bookkeeping on the live plan of tests/models/llama_like."""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
TOOL = os.path.join(ROOT, "tools", "compare_ports.py")
PLAN = os.path.join(HERE, "fixture_plan.json")
PORTS = os.path.join(HERE, "fixture_ports.json")
NPUFUSE = None


def load_tool():
    spec = importlib.util.spec_from_file_location("compare_ports", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_tool(*args):
    done = subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def compare(*extra):
    code, out, err = run_tool(PLAN, "--ports", PORTS, "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out)


def outcomes(port_result):
    return {(row["api"], row["role"]): (row["outcome"], [c["id"] for c in row["candidates"]])
            for row in port_result["ops"]}


class FixtureComparison(unittest.TestCase):
    def test_only_ports_covering_the_model(self):
        report = compare("--model", "llama_like")
        self.assertEqual([p["port"] for p in report["ports"]], ["fixture/static_cache_port"])

    def test_default_ops_both_stages(self):
        port = compare("--model", "llama_like")["ports"][0]
        self.assertEqual(outcomes(port), {
            ("npu_rms_norm", "rms_norm"): ("found", ["norm.rms_norm@model.py:5"]),
            ("npu_add_rms_norm", "add_rms_norm"): ("found_partial_stages", ["norm.add_rms_norm@model.py:40"]),
            # Met by an alternative rule of another entry (plan schema 2).
            ("npu_add_layer_norm", "add_layer_norm"): (
                "found", ["norm.layer_norm@model.py:60 (alternative norm.add_layer_norm)"]),
            ("npu_apply_rotary_pos_emb", "rope"): ("found", ["rope.rope_half_rotary_mul@model.py:20"]),
            ("scatter_update_", "kv_cache_write"): ("missed", ["kv_cache.cache_write@model.py:28"]),
            ("npu_prompt_flash_attention", "attention_core"): ("refused", ["attention.fia_prefill@model.py:30"]),
            # The attention step without a fused operator is told for the core, not the cache.
            ("npu_incre_flash_attention", "attention_core"): ("missed", ["attention.repeat_kv@model.py:29"]),
        })
        rope = next(r for r in port["ops"] if r["module"] == "rope")
        self.assertEqual(rope["candidates"][0]["match"], "equivalent")
        rms = next(r for r in port["ops"] if r["role"] == "rms_norm")
        self.assertEqual(rms["candidates"][0]["match"], "exact")

    def test_near_misses_only_of_the_missed_module(self):
        port = compare("--model", "llama_like")["ports"][0]
        cache = next(r for r in port["ops"] if r["module"] == "kv_cache_write")
        self.assertEqual(len(cache["near_misses"]), 1)
        self.assertIn("kv_cache.static_cache_write", cache["near_misses"][0])
        found = next(r for r in port["ops"] if r["role"] == "rms_norm")
        self.assertEqual(found["near_misses"], [])

    def test_extras(self):
        port = compare("--model", "llama_like")["ports"][0]
        extras = {e["id"]: e for e in port["extras"]}
        self.assertEqual(sorted(extras), ["ffn.swiglu@model.py:50", "norm.qk_norm@model.py:5",
                                          "rope.rope_cos_sin_precompute@model.py:12"])
        self.assertTrue(extras["rope.rope_cos_sin_precompute@model.py:12"]["prerequisite_only"])
        self.assertFalse(extras["ffn.swiglu@model.py:50"]["prerequisite_only"])
        self.assertEqual(extras["ffn.swiglu@model.py:50"]["expert_kept_in_torch"], ["MLP SwiGLU (port.py:60)"])
        self.assertEqual(extras["norm.qk_norm@model.py:5"]["expert_kept_in_torch"], [])

    def test_op_limited_to_another_model(self):
        port = compare("--model", "other_model")["ports"][0]
        got = outcomes(port)
        self.assertEqual(got[("npu_rms_norm", "qk_head_norm")], ("found", ["norm.qk_norm@model.py:5"]))
        self.assertEqual(got[("npu_rms_norm", "rms_norm")], ("found", ["norm.rms_norm@model.py:5"]))
        self.assertNotIn("norm.qk_norm@model.py:5", [e["id"] for e in port["extras"]])

    def test_switch_ops_need_all_when(self):
        self.assertNotIn(("npu_quant_matmul", "linear_int8_matmul"),
                         outcomes(compare("--model", "llama_like")["ports"][0]))
        got = outcomes(compare("--model", "llama_like", "--all-when")["ports"][0])
        self.assertEqual(got[("npu_quant_matmul", "linear_int8_matmul")], ("missed", []))

    def test_decode_stage(self):
        port = compare("--model", "llama_like", "--stage", "decode")["ports"][0]
        got = outcomes(port)
        self.assertNotIn(("npu_prompt_flash_attention", "attention_core"), got)
        # The fused add+norm is offered for prefill only: decode misses it.
        self.assertEqual(got[("npu_add_rms_norm", "add_rms_norm")], ("missed", []))
        self.assertEqual(got[("npu_rms_norm", "rms_norm")][0], "found")

    def test_unknown_model_fails(self):
        code, _, err = run_tool(PLAN, "--ports", PORTS, "--model", "nobody")
        self.assertNotEqual(code, 0)
        self.assertIn("no port", err)

    def test_markdown_names_every_outcome(self):
        code, out, err = run_tool(PLAN, "--ports", PORTS, "--model", "llama_like")
        self.assertEqual(code, 0, err)
        for word in ("| found |", "| missed |", "| refused |", "| found_partial_stages |",
                     "`ffn.swiglu@model.py:50`", "kept this in torch",
                     "`kv_cache.cache_write@model.py:28` (no_fused_op)"):
            self.assertIn(word, out)


class ForbiddenApis(unittest.TestCase):
    def setUp(self):
        self.tool = load_tool()
        with open(PLAN, encoding="utf-8") as handle:
            self.plan = json.load(handle)
        self.choices = {"llama_like": {"must_not": [
            {"api": "npu_rotary_mul", "unless": "rotary_mode='half' (the default)", "why": "pairs differ"},
            {"api": "npu_swiglu", "unless": "", "why": "made-up ban for the test"},
        ]}}

    def verdicts(self, rules_dir):
        return {(f["id"], f["verdict"]) for f in
                self.tool.forbidden_uses(self.plan, self.choices, "llama_like", rules_dir)}

    def test_rule_facts_clear_a_conditional_ban(self):
        self.assertEqual(self.verdicts(os.path.join(ROOT, "rules")), {
            ("rope.rope_half_rotary_mul@model.py:20", "cleared"),
            ("ffn.swiglu@model.py:50", "forbidden"),
        })

    def test_unless_against_facts(self):
        verdict = self.tool.unless_verdict
        self.assertEqual(verdict("rotary_mode='half' (the default)", {"rotary_mode": "half"}), "cleared")
        self.assertEqual(verdict("rotary_mode='half'", {"rotary_mode": "interleave"}), "forbidden")
        self.assertEqual(verdict("norm_type=1 (sigmoid)", {"norm_type": 1}), "cleared")
        self.assertEqual(verdict("norm_type=1 (sigmoid)", {"norm_type": 0}), "forbidden")
        self.assertEqual(verdict("norm_type=1 (sigmoid)", {"scoring_func": "sigmoid"}), "check")
        self.assertEqual(verdict("followed by a renormalisation", {"rotary_mode": "half"}), "check")

    def test_unreadable_rule_does_not_clear(self):
        with tempfile.TemporaryDirectory() as empty:
            self.assertEqual(self.verdicts(empty), {
                ("rope.rope_half_rotary_mul@model.py:20", "check"),
                ("ffn.swiglu@model.py:50", "forbidden"),
            })


class LivePlan(unittest.TestCase):
    """The bookkeeping on a real plan: every compared op has one outcome, the
    candidates it cites exist, and extras are exactly the other recommendations."""

    def test_llama_like(self):
        if not NPUFUSE:
            self.skipTest("needs --npufuse")
        model = os.path.join(ROOT, "tests", "models", "llama_like")
        with tempfile.TemporaryDirectory() as tmp:
            plan_path = os.path.join(tmp, "plan.json")
            done = subprocess.run([NPUFUSE, "analyze", os.path.join(model, "model.py"),
                                   "--config", os.path.join(model, "config.json"),
                                   "--format", "json", "-o", plan_path],
                                  capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(plan_path, encoding="utf-8") as handle:
                plan = json.load(handle)
            code, out, err = run_tool(plan_path, "--ports", PORTS, "--model", "llama_like",
                                      "--format", "json")
        self.assertEqual(code, 0, err)
        port = json.loads(out)["ports"][0]
        by_id = {c["id"]: c for c in load_tool().flatten_candidates(plan)}
        self.assertEqual(len(port["ops"]), 7)
        used = set()
        for row in port["ops"]:
            self.assertIn(row["outcome"], {"found", "found_partial_stages", "refused", "missed"})
            for cited in row["candidates"]:
                self.assertIn(cited["id"], by_id)
                if row["outcome"] != "missed":
                    used.add(cited["id"])
                else:
                    self.assertEqual(by_id[cited["id"]]["status"], "no_fused_op")
        used_entries = {by_id[i].get("alternative_of", i) for i in used}
        recommending = {c["id"] for c in plan["candidates"]
                        if c["status"] in ("candidate", "candidate_with_prerequisites")}
        self.assertEqual({e["id"] for e in port["extras"]}, recommending - used_entries)
        # The plain RMSNorm chain of every decoder layer is the one thing any plan must find.
        rms = next(r for r in port["ops"] if r["role"] == "rms_norm")
        self.assertEqual(rms["outcome"], "found")


if __name__ == "__main__":
    if "--npufuse" in sys.argv:
        at = sys.argv.index("--npufuse")
        NPUFUSE = sys.argv[at + 1]
        del sys.argv[at:at + 2]
    unittest.main()
