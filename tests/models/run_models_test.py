"""Runs every test model under tests/models/ on CPU and checks its KV cache.

Each tests/models/<name>/model.py provides:
  parse_config(dict)            -> config object (must accept config.json too)
  from_config(dict)             -> nn.Module
  full_logits(model, ids)       -> [B, S, V] logits of one forward without a cache
  incremental_logits(model, ids, prompt_len)
                                -> [B, S - prompt_len + 1, V]: the last-position
                                   logits of the prefill, then of each decode step
and may set VARIANTS, a list of config overrides that are each run too
(for example both attention paths of an MLA model), and VARIANTS_AGREE = True
when every variant must compute the same logits from the same weights.

For every model and variant this checks that the logits are finite and shaped
right, and that decoding through the cache reproduces the cache-free forward.
Exit status is non-zero when any check fails.
"""
import importlib.util
import json
import sys
import time
import traceback
from pathlib import Path

import torch

MODELS_DIR = Path(__file__).resolve().parent
BATCH = 2
PROMPT_LEN = 6
DECODE_STEPS = 3
TOLERANCE = 1e-4


def load_module(model_py: Path):
    spec = importlib.util.spec_from_file_location(f"testmodel_{model_py.parent.name}", model_py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def vocab_size_of(config: dict) -> int:
    return int(config["vocab_size"])


def check_variant(module, config: dict, label: str):
    """Returns (problems, full-forward logits)."""
    problems = []
    torch.manual_seed(0)
    model = module.from_config(config).eval()
    vocab = vocab_size_of(config)
    total = PROMPT_LEN + DECODE_STEPS
    input_ids = torch.randint(0, vocab, (BATCH, total), generator=torch.Generator().manual_seed(1))

    full = module.full_logits(model, input_ids)
    steps = module.incremental_logits(model, input_ids, PROMPT_LEN)

    if tuple(full.shape) != (BATCH, total, vocab):
        problems.append(f"{label}: full logits shape {tuple(full.shape)}, want {(BATCH, total, vocab)}")
    if tuple(steps.shape) != (BATCH, DECODE_STEPS + 1, vocab):
        problems.append(f"{label}: decode logits shape {tuple(steps.shape)}, want {(BATCH, DECODE_STEPS + 1, vocab)}")
    if not torch.isfinite(full).all() or not torch.isfinite(steps).all():
        problems.append(f"{label}: non-finite logits")
    if problems:
        return problems, full
    if float(full.abs().max()) == 0.0:
        problems.append(f"{label}: logits are all zero, the check would be vacuous")

    reference = full[:, PROMPT_LEN - 1 :]
    diff = (reference - steps).abs().max().item()
    if not diff <= TOLERANCE:
        per_step = (reference - steps).abs().amax(dim=(0, 2)).tolist()
        problems.append(f"{label}: cached decode differs from full forward by {diff:.3g} (per step {per_step})")
    return problems, full


def check_model(model_dir: Path) -> list:
    name = model_dir.name
    problems = []
    module = load_module(model_dir / "model.py")
    for required in ("parse_config", "from_config", "full_logits", "incremental_logits"):
        if not hasattr(module, required):
            return [f"{name}: model.py lacks {required}()"]

    for config_name in ("config.json", "config.tiny.json"):
        path = model_dir / config_name
        if not path.is_file():
            problems.append(f"{name}: missing {config_name}")
            continue
        try:
            module.parse_config(json.loads(path.read_text()))
        except Exception as err:  # report every broken config, keep going
            problems.append(f"{name}/{config_name}: does not parse: {err!r}")
    if problems:
        return problems

    tiny = json.loads((model_dir / "config.tiny.json").read_text())
    variants = getattr(module, "VARIANTS", None) or [{}]
    outputs = []
    for overrides in variants:
        label = name + ("" if not overrides else " " + json.dumps(overrides, sort_keys=True))
        started = time.perf_counter()
        variant_problems, full = check_variant(module, {**tiny, **overrides}, label)
        problems += variant_problems
        outputs.append((label, full))
        print(f"  {label}: {time.perf_counter() - started:.2f}s")

    if getattr(module, "VARIANTS_AGREE", False) and not problems:
        base_label, base = outputs[0]
        for label, other in outputs[1:]:
            diff = (base - other).abs().max().item()
            if not diff <= TOLERANCE:
                problems.append(f"{label} disagrees with {base_label} by {diff:.3g}")
    return problems


def main() -> int:
    torch.set_num_threads(1)
    model_dirs = sorted(p.parent for p in MODELS_DIR.glob("*/model.py"))
    if not model_dirs:
        print("no test models found", file=sys.stderr)
        return 1
    failures = []
    for model_dir in model_dirs:
        try:
            failures += check_model(model_dir)
        except Exception:  # one broken model must not hide the others
            failures.append(f"{model_dir.name}: raised\n{traceback.format_exc()}")
    for line in failures:
        print("FAIL", line, file=sys.stderr)
    print(f"{len(model_dirs)} models, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
