#!/usr/bin/env python3
"""No plan in the transformers zoo binds the compressed causal mask where the model's mask is not causal-only.

Exports every causal LM of the installed transformers (tools/export_configs.py),
analyses the zoo with one `npufuse analyze DIR` tree scan, and walks every plan.
A rule whose facts bind `sparse_mode` 2 or 3 (FIA prefill and its variants, the
attention-sink rules, the causal lightning indexer, MLA's absorbed FIA, sparse
flash attention) replaces the model's mask with the 2048x2048 causal one. Such
a candidate (or alternative) may be `candidate` / `candidate_with_prerequisites`
only where this test finds the model's mask causal-only, from the config and
the code, independently of npufuse:

- a sliding or chunked window on some layer: `layer_types` naming sliding,
  local or chunked layers, or a window length in the config (`sliding_window`,
  `sliding_window_size`, `attention_chunk_size`) that `use_sliding_window` does
  not switch off, where the modeling file builds a windowed mask;
- a top-k selection from an indexer: `index_topk` in the config, for every
  rule but the sparse ones that take the selection themselves;
- an encoder's two-way attention: `is_decoder` false in the config where the
  modeling file builds a bidirectional mask (the BERT family).

Run with the virtual environment's Python (it needs transformers).
"""
import argparse
import ast
import glob
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# Rules that take the indexer's selection as their own input: the top-k is
# part of what they compute, not a mask they replace.
TAKES_TOPK = {"mla.sparse_flash_attention", "mla.kv_quant_sparse_flash_attention", "indexer.lightning_indexer_causal",
              "indexer.lightning_indexer_head_matmul"}
WINDOW_KEYS = ("sliding_window", "sliding_window_size", "attention_chunk_size")
WINDOWED_MASK_CODE = ("create_sliding_window_causal_mask", "create_chunked_causal_mask", "sliding_window_causal")


def compressed_mask_rules():
    out = set()
    for path in glob.glob(os.path.join(ROOT, "rules", "*", "*.py")):
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "RULE" for t in node.targets):
                rule = ast.literal_eval(node.value)
                if rule.get("facts", {}).get("sparse_mode") in (2, 3):
                    out.add(rule["id"])
    return out


def config_get(cfg, key):
    if key in cfg:
        return cfg[key]
    for nested in ("text_config", "language_config", "llm_config"):
        if isinstance(cfg.get(nested), dict) and key in cfg[nested]:
            return cfg[nested][key]
    return None


def not_causal_only(folder):
    """Why the model's mask is more than causal, or None."""
    cfg = json.load(open(os.path.join(folder, "config.json"), encoding="utf-8"))
    code = "".join(open(p, encoding="utf-8").read() for p in glob.glob(os.path.join(folder, "*.py")))
    layer_types = config_get(cfg, "layer_types") or []
    windowed_layers = sorted({t for t in layer_types if isinstance(t, str) and
                              any(w in t for w in ("sliding", "local", "chunk"))})
    if windowed_layers:
        return f"layer_types has {', '.join(windowed_layers)}"
    if config_get(cfg, "use_sliding_window") is not False and not layer_types:
        for key in WINDOW_KEYS:
            value = config_get(cfg, key)
            if isinstance(value, int) and value > 0 and any(c in code for c in WINDOWED_MASK_CODE):
                return f"{key} = {value} and the code builds a windowed mask"
    if config_get(cfg, "index_topk"):
        return "index_topk: attention masked by an indexer's top-k selection"
    if cfg.get("is_decoder") is False and "create_bidirectional_mask" in code:
        return "is_decoder = false: the code builds a bidirectional mask"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npufuse", required=True)
    args = ap.parse_args()
    rules = compressed_mask_rules()
    if not {"attention.fia_prefill", "attention.attention_sinks"} <= rules:
        print(f"FAIL: the rules binding sparse_mode 2/3 were not found: {sorted(rules)}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        zoo, out = os.path.join(tmp, "zoo"), os.path.join(tmp, "plans")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "export_configs.py"), "--out", zoo],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([args.npufuse, "analyze", zoo, "--out", out, "--no-cache", "--no-progress"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        summary = json.load(open(os.path.join(out, "summary.json"), encoding="utf-8"))
        bad, checked, guarded = [], 0, 0
        for m in summary["models"]:
            if not m.get("plan"):
                continue
            plan = json.load(open(os.path.join(out, m["plan"]), encoding="utf-8"))
            why = not_causal_only(os.path.join(zoo, m["name"]))
            for c in plan["candidates"]:
                for entry in [c] + c.get("alternatives", []):
                    if entry.get("rule") not in rules:
                        continue
                    checked += 1
                    if why is None:
                        continue
                    guarded += 1
                    if why.startswith("index_topk") and entry["rule"] in TAKES_TOPK:
                        continue
                    if entry["status"] in ("candidate", "candidate_with_prerequisites"):
                        bad.append(f"{m['name']}: {entry['id']} is {entry['status']}, but {why}")
    for b in bad:
        print("FAIL:", b)
    print(f"zoo masks: {len(summary['models'])} models, {checked} compressed-mask entries, "
          f"{guarded} at sites whose mask is not causal-only, {len(bad)} offered there")
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
