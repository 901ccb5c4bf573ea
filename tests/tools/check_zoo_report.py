#!/usr/bin/env python3
"""tools/zoo_report.py on a small zoo made of the test models.

Each model folder is linked into a temporary zoo; the report must decompose
them, give every module one of the four states, account llama_like's attention
core, RoPE and norms as candidates, count a model it cannot decompose (a folder
holding only a plain MLP classifier) as unaccounted modules instead of leaving
it out, and write the Markdown tables.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

NOT_A_DECODER = '''import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.up = nn.Linear(config.hidden_size, config.intermediate_size)
        self.down = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npufuse", required=True)
    args = ap.parse_args()
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        zoo = os.path.join(tmp, "zoo")
        os.makedirs(zoo)
        for m in ("llama_like", "qwen3_moe_like"):
            os.makedirs(os.path.join(zoo, m))
            for f in ("model.py", "config.json"):
                os.symlink(os.path.join(ROOT, "tests", "models", m, f), os.path.join(zoo, m, f))
        os.makedirs(os.path.join(zoo, "mlp_only"))
        with open(os.path.join(zoo, "mlp_only", "model.py"), "w", encoding="utf-8") as h:
            h.write(NOT_A_DECODER)
        with open(os.path.join(zoo, "mlp_only", "config.json"), "w", encoding="utf-8") as h:
            json.dump({"hidden_size": 64, "intermediate_size": 128}, h)
        out_json, out_md = os.path.join(tmp, "zoo.json"), os.path.join(tmp, "zoo.md")
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "zoo_report.py"), "--zoo", zoo, "--npufuse",
                            args.npufuse, "--work", os.path.join(tmp, "work"), "--variant", "default=",
                            "--variant", "tp8ep8=--tp 8 --ep 8", "--json", out_json, "--md", out_md],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            return 1
        report = json.load(open(out_json, encoding="utf-8"))
        md = open(out_md, encoding="utf-8").read()
    check(set(report["variants"]) == {"default", "tp8ep8"}, f"variants: {list(report['variants'])}")
    default = report["variants"]["default"]
    check(default["decomposed"] == 2, f"decomposed {default['decomposed']} of 3 (llama_like and qwen3_moe_like expected)")
    llama = default["models"]["llama_like"]
    states = {(r["module"], r["kind"]): r["state"] for r in llama["rows"]}
    for key in [("attention", "attention_core"), ("attention", "rope"), ("attention", "input_norm"), ("ffn", "activation")]:
        check(states.get(key) == "candidate", f"llama_like {key}: {states.get(key)}")
    whys = {(r["module"], r["kind"]): r["why"] for r in llama["rows"]}
    check(states.get(("attention", "qkv_projection")) == "no_fused_op" and "plain projection" in whys.get(("attention", "qkv_projection"), ""),
          f"llama_like's q/k/v projection: {states.get(('attention', 'qkv_projection'))}, {whys.get(('attention', 'qkv_projection'))}")
    for r in llama["rows"] + default["models"]["qwen3_moe_like"]["rows"]:
        check(r["state"] in ("candidate", "not_applicable", "no_fused_op", "unaccounted"), f"state {r}")
        check(bool(r["why"]), f"no reason: {r}")
    moe_kinds = {r["kind"] for r in default["models"]["qwen3_moe_like"]["rows"] if r["module"] == "moe"}
    check({"gate", "experts", "combine"} <= moe_kinds, f"qwen3_moe_like MoE steps: {sorted(moe_kinds)}")
    mlp = default["models"]["mlp_only"]
    check(not mlp["decomposed"] and mlp["totals"]["unaccounted"] >= 1,
          f"the undecomposed model's modules are not counted as unaccounted: {mlp['totals']}")
    t = default["totals"]
    check(t["modules"] == sum(t[s] for s in ("candidate", "not_applicable", "no_fused_op", "unaccounted")),
          f"totals do not add up: {t}")
    check("| default |" in md and "| tp8ep8 |" in md and "`mlp_only`" in md, "the Markdown lacks a variant row or the unaccounted list")
    # A module an analysed layer holds that no chain names is an unaccounted row; one of a layer the
    # decomposition did not analyse (a vision tower's) or inside a chained module is not.
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import zoo_report
    node = lambda cls, role, *children: {"class": cls, "role": role, "children": list(children)}
    inventory = {"chains": [{"block_class": "Layer", "modules": [{"class": "Attn"}]}],
                 "structure": {"root": node("Model", "causal_lm",
                                            node("Layer", "decoder_layer", node("Attn", "attention", node("Inner", "mlp")),
                                                 node("SharedMlp", "mlp"), node("Norm", "rms_norm")),
                                            node("VisionLayer", "decoder_layer", node("VisionAttn", "attention")))}}
    rows = zoo_report.unchained_modules(inventory)
    check([(r["module"], r["state"]) for r in rows] == [("SharedMlp", "unaccounted")],
          f"modules no chain names: {[(r['module'], r['state']) for r in rows]}")
    for f in failures:
        print("FAIL:", f)
    print(f"zoo report: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
