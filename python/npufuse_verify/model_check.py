"""Model-level check: the original and the patched model file, same random weights, same logits.

    python3 -m npufuse_verify.model_check --original model.py --patched out/model.py
        --config config.json [--device cpu|npu|auto] [--atol 1e-4]

A self-contained model file (it imports only torch and the standard library) that offers
`from_config(dict)`, `full_logits(model, ids)` and `incremental_logits(model, ids,
prompt_len)` is built twice from the same config; the patched copy gets the original's
weights through `load_state_dict` (so load-time hooks such as the gate/up merge run).
Compared: the logits of a full forward (prefill) and those of a prefill followed by
decode steps through the KV cache. Prints one JSON object.

The config is the small one next to the given config (config.tiny.json) when there is
one, in float32. When a torch_npu operator refuses its shapes (RoPE and attention take
head_dim 64 or 128 only), the comparison runs once more with head_dim 64 and
hidden_size = heads * 64, and `config_note` says so.
"""
import argparse
import ast
import json
import os
import sys

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)

from npufuse_verify import device as device_choice  # noqa: E402
from npufuse_verify.harness import finite, load_module  # noqa: E402

ENTRY_POINTS = ("from_config", "full_logits", "incremental_logits")
_STDLIB_OK = {"math", "dataclasses", "typing", "functools", "itertools", "collections", "enum", "abc",
              "contextlib", "copy", "__future__", "warnings", "os", "sys", "json", "re"}


def foreign_imports(path):
    """Top-level modules the file imports besides torch (and torch_npu) and the standard library."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            roots = ["." if node.level else (node.module or "").split(".")[0]]
        else:
            continue
        for root in roots:
            if root not in ("torch", "torch_npu") and root not in _STDLIB_OK:
                found.add(root)
    return sorted(found)


def small_config(config_path):
    tiny = os.path.join(os.path.dirname(config_path), "config.tiny.json")
    used = tiny if os.path.exists(tiny) else config_path
    with open(used, encoding="utf-8") as handle:
        config = json.load(handle)
    config["torch_dtype"] = "float32"
    return config, used


def operator_sized(config):
    """The config with head_dim 64 (hidden_size = heads * 64), or None when it has no heads."""
    if "num_attention_heads" not in config or "hidden_size" not in config:
        return None
    sized = dict(config, head_dim=64, hidden_size=int(config["num_attention_heads"]) * 64)
    return sized if sized != config else None


def compare(original, patched, config, where):
    import torch
    torch.manual_seed(0)
    a = original.from_config(config).eval()
    b = patched.from_config(config).eval()
    b.load_state_dict(a.state_dict())
    a, b = a.to(where), b.to(where)
    ids = torch.randint(0, int(config["vocab_size"]), (2, 9), generator=torch.Generator().manual_seed(1)).to(where)
    rows = []
    for stage, fn, args in (("prefill", "full_logits", (ids,)), ("prefill+decode", "incremental_logits", (ids, 6))):
        x = getattr(original, fn)(a, *args).float().cpu()
        y = getattr(patched, fn)(b, *args).float().cpu()
        diff = (x - y).abs()
        cos = float(torch.nn.functional.cosine_similarity(x.flatten(), y.flatten(), dim=0))
        rows.append({"stage": stage, "what": "logits", "max_abs": float(diff.max()),
                     "max_rel": float((diff / (x.abs() + 1e-6)).max()), "cosine": cos,
                     "finite": bool(torch.isfinite(y).all())})
    return rows


def run(original_path, patched_path, config_path, device="auto", atol=1e-4, min_cosine=0.99999):
    result = {"original": original_path, "patched": patched_path, "passed": False, "skipped": None,
              "error": None, "rows": [], "atol": atol, "min_cosine": min_cosine}
    foreign = sorted(set(foreign_imports(original_path)) | set(foreign_imports(patched_path)))
    if foreign:
        result["skipped"] = f"the model file imports {', '.join(foreign)}: not self-contained"
        return result
    try:
        where, words = device_choice.select(device)
        result["device"] = words
        tag = str(abs(hash(patched_path)))
        original = load_module(original_path, "npufuse_model_original_" + tag)
        patched = load_module(patched_path, "npufuse_model_patched_" + tag)
        missing = [e for e in ENTRY_POINTS if not hasattr(original, e) or not hasattr(patched, e)]
        if missing:
            result["skipped"] = f"no model entry point {', '.join(missing)} (see docs/verify.md)"
            return result
        config, used = small_config(config_path)
        result["config"] = used
        try:
            result["rows"] = compare(original, patched, config, where)
        except ValueError as err:
            # A torch_npu operator refused the small config's shapes (RoPE and attention
            # take head_dim 64 or 128): retry once at head_dim 64, and say so.
            sized = operator_sized(config)
            if type(err).__name__ != "ConstraintError" or sized is None:
                raise
            result["config_note"] = f"{err}; compared again with head_dim 64, hidden_size heads * 64"
            result["rows"] = compare(original, patched, sized, where)
        result["passed"] = all(r["finite"] and r["max_abs"] <= atol and r["cosine"] >= min_cosine
                               for r in result["rows"])
    except Exception as err:
        result["error"] = f"{type(err).__name__}: {err}"
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--original", required=True)
    ap.add_argument("--patched", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--device", default="auto", choices=("cpu", "npu", "auto"))
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    args = ap.parse_args(argv)
    print(json.dumps(finite(run(args.original, args.patched, args.config, args.device, args.atol,
                                args.min_cosine))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
