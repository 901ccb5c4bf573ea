"""Model-level check: the original and the patched model file, same random weights, same logits.

    python3 -m npufuse_verify.model_check --original model.py --patched out/model.py
        --config config.json [--entry module:callable] [--device cpu|npu|auto] [--atol 1e-4]
        [--padded yes|no|auto]

The model is built through one of three kinds of entry (`entries.py`): npufuse's own
contract (`from_config`, `full_logits`, `incremental_logits`), a HuggingFace modeling
file built through the installed transformers from its own config class, official
inference code with a `ModelArgs`-style dataclass, or `--entry module:callable`. The
config is made small with the same structure (`tiny_config.py`; a `config.tiny.json`
beside the config is taken as it is instead). The patched copy gets the original's
weights through `load_state_dict` (so load-time hooks such as the gate/up merge run).

Compared, in float32: the logits of a full forward (prefill), of a prefill followed by
three decode steps through the model's own cache, and of a left-padded batch at its
unpadded positions (where the model takes an attention mask; `--padded no` when the
deployment never pads). While the patched model is loaded, built and run, the lines of
the patched file that run are recorded (`lines_run`): a candidate counts as exercised
only when its changed lines are among them. Prints one JSON object.

When a torch_npu operator refuses the small config's shapes (a `ConstraintError`), the
comparison runs once more with head_dim 64 and `config_note` says so. When the original
model itself cannot be built or run here, the check is `skipped` with the reason: that
is no verdict on the patch.
"""
import argparse
import json
import os
import sys

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)

from npufuse_verify import device as device_choice  # noqa: E402
from npufuse_verify import entries  # noqa: E402
from npufuse_verify.harness import finite, load_module_leniently  # noqa: E402
from npufuse_verify.line_trace import LinesRun  # noqa: E402
from npufuse_verify.tiny_config import tiny  # noqa: E402

ENTRY_POINTS = entries.ENTRY_POINTS
PROMPT = 6
LENGTH = 9
PAD = 3


def read_config(config_path):
    """(config dict, the file it came from, whether it is a ready-made small one)."""
    small = os.path.join(os.path.dirname(config_path), "config.tiny.json")
    used = small if os.path.exists(small) else config_path
    with open(used, encoding="utf-8") as handle:
        config = json.load(handle)
    return config, used, used == small


def operator_sized(config):
    """The config with head_dim 64 (hidden_size = heads * 64), or None when it has no heads."""
    if "num_attention_heads" not in config or "hidden_size" not in config:
        return None
    sized = dict(config, head_dim=64, hidden_size=int(config["num_attention_heads"]) * 64)
    return sized if sized != config else None


def load_pair(original_path, patched_path, config, entry_spec):
    """(entry for the original, entry for the patched copy, stand-in imports); raises NoEntry."""
    tag = str(abs(hash((original_path, patched_path))))
    folder = os.path.dirname(os.path.abspath(original_path))
    if folder not in sys.path:
        sys.path.insert(1, folder)  # sibling modules of the original (DeepSeek's `kernel`)
    if not entry_spec and entries.is_transformers_file(original_path):
        a = entries.Transformers.load(original_path, config, "npufuse_original_" + tag)
        b = entries.Transformers.load(patched_path, config, "npufuse_patched_" + tag)
        return entries.Transformers.find(a, config), entries.Transformers.find(b, config), []
    a, stubbed_a = load_module_leniently(original_path, "npufuse_model_original_" + tag)
    b, stubbed_b = load_module_leniently(patched_path, "npufuse_model_patched_" + tag)
    stubbed = sorted(set(stubbed_a) | set(stubbed_b))
    if entry_spec:
        return entries.Callable(entry_spec, a, config), entries.Callable(entry_spec, b, config), stubbed
    if all(hasattr(a, e) and hasattr(b, e) for e in ENTRY_POINTS):
        return entries.SelfContained(a), entries.SelfContained(b), stubbed
    try:
        return entries.Inference.find(a), entries.Inference.find(b), stubbed
    except entries.NoEntry as err:
        missing = [e for e in ENTRY_POINTS if not hasattr(a, e)]
        raise entries.NoEntry(f"no model entry: not a HuggingFace modeling file, no {', '.join(missing)} "
                              f"(docs/verify.md), and {err}") from err


def _row(stage, x, y, rows):
    import torch
    diff = (x - y).abs()
    cos = float(torch.nn.functional.cosine_similarity(x.flatten(), y.flatten(), dim=0))
    rows.append({"stage": stage, "what": "logits", "max_abs": float(diff.max()),
                 "max_rel": float((diff / (x.abs() + 1e-6)).max()), "cosine": cos,
                 "finite": bool(torch.isfinite(y).all())})


def compare(original, patched, config, where, padded, trace):
    import torch
    torch.manual_seed(0)
    a = original.build(config)
    with trace:
        b = patched.build(config)
    missing, unexpected = b.load_state_dict(a.state_dict(), strict=False)
    if missing or unexpected:
        # A patch that renames or adds parameters must say how the old ones load.
        raise RuntimeError(f"the patched model's parameters differ: missing {list(missing)[:5]}, "
                           f"unexpected {list(unexpected)[:5]}")
    a, b = a.to(where), b.to(where)
    vocab = int(next(v for k, v in _sizes(config) if k == "vocab"))
    ids = torch.randint(0, vocab, (2, LENGTH), generator=torch.Generator().manual_seed(1)).to(where)
    rows = []
    x = original.prefill(a, ids).cpu()
    with trace:
        y = patched.prefill(b, ids).cpu()
    _row("prefill", x, y, rows)
    x = original.decode(a, ids, PROMPT).cpu()
    with trace:
        y = patched.decode(b, ids, PROMPT).cpu()
    _row(f"prefill+{LENGTH - PROMPT} decode steps", x, y, rows)
    mask = torch.ones_like(ids)
    mask[0, :PAD] = 0
    x = original.padded(a, ids, mask) if padded else None
    if x is not None:
        with trace:
            y = patched.padded(b, ids, mask)
        keep = mask.bool().cpu()
        _row("left-padded batch", x.cpu()[keep], y.cpu()[keep], rows)
    return rows


def _sizes(config):
    for key in ("vocab_size",):
        if isinstance(config.get(key), int):
            yield "vocab", config[key]
    nested = config.get("text_config")
    if isinstance(nested, dict) and isinstance(nested.get("vocab_size"), int):
        yield "vocab", nested["vocab_size"]


def run(original_path, patched_path, config_path, device="auto", atol=1e-4, min_cosine=0.99999, entry=None,
        padded="auto"):
    result = {"original": original_path, "patched": patched_path, "passed": False, "skipped": None,
              "error": None, "rows": [], "atol": atol, "min_cosine": min_cosine, "lines_run": {}}
    trace = LinesRun([patched_path])
    try:
        where, words = device_choice.select(device)
        result["device"] = words
        raw, used, ready = read_config(config_path)
        result["config"] = used
        try:
            with trace:
                original, patched, stubbed = load_pair(original_path, patched_path, raw, entry)
        except entries.NoEntry as err:
            result["skipped"] = str(err)
            return result
        result["entry"] = original.kind
        notes = list(getattr(original, "notes", []))
        if stubbed:
            notes.append("imports stood in for: " + ", ".join(stubbed))
        config = raw
        # npufuse's own contract takes its config as given (config.tiny.json beside it
        # when there is one); the other entries get a small one with the same structure.
        if not ready and original.kind != "self-contained":
            config, changes = tiny(original.full_config(raw))
            if changes:
                notes.append("small config with the same structure: " + "; ".join(changes))
        config = dict(config, torch_dtype="float32") if original.kind == "self-contained" else config
        result["notes"] = notes
        # The original alone first: when it cannot run here, that is no verdict on the patch.
        try:
            import torch
            torch.manual_seed(0)
            probe = original.build(config)
            del probe
        except Exception as err:  # noqa: BLE001 -- reported, not hidden
            result["skipped"] = f"the original model cannot be built here: {type(err).__name__}: {err}"
            return result
        want_padded = padded != "no"
        try:
            result["rows"] = compare(original, patched, config, where, want_padded, trace)
        except ValueError as err:
            # A torch_npu operator refused the small config's shapes (RoPE and attention
            # take head_dim 64 or 128): retry once at head_dim 64, and say so.
            sized = operator_sized(config)
            if type(err).__name__ != "ConstraintError" or sized is None:
                raise
            result["config_note"] = f"{err}; compared again with head_dim 64, hidden_size heads * 64"
            result["rows"] = compare(original, patched, sized, where, want_padded, trace)
        if want_padded and not any(r["stage"] == "left-padded batch" for r in result["rows"]):
            result["notes"].append("no left-padded batch: the model's forward takes no attention mask")
        result["passed"] = all(r["finite"] and r["max_abs"] <= atol and r["cosine"] >= min_cosine
                               for r in result["rows"])
    except Exception as err:  # noqa: BLE001 -- the patched side failing is the finding
        result["error"] = f"{type(err).__name__}: {err}"
    finally:
        result["lines_run"] = trace.lines()
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--original", required=True)
    ap.add_argument("--patched", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--entry", default=None, help="module:callable building and running the model (docs/verify.md)")
    ap.add_argument("--device", default="auto", choices=("cpu", "npu", "auto"))
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--min-cosine", type=float, default=0.99999)
    ap.add_argument("--padded", default="auto", choices=("yes", "no", "auto"))
    args = ap.parse_args(argv)
    print(json.dumps(finite(run(args.original, args.patched, args.config, args.device, args.atol,
                                args.min_cosine, args.entry, args.padded))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
