#!/usr/bin/env python3
"""Writes a model folder per decoder-style text model of the installed transformers.

    build/venv/bin/python tools/export_configs.py --out DIR [--models llama,qwen2,...]

For each model type that transformers maps to a causal-LM class
(`MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`) and whose package has a `modeling_<m>.py`, it writes
`DIR/<m>/config.json`, made by the model's own configuration class: its defaults plus
the fields the class computes (`to_dict()`), with `architectures` naming the causal-LM
class, and `DIR/<m>/modeling_<m>.py`, a symbolic link to the installed file (so the
analysis reads it where it lies, and a whole-model check loads it in its package's place).
Neither the files nor the configs belong in the repository: this regenerates them.

Prints one line per model written and a summary line; `--json FILE` also writes the list
(model type, causal-LM class, config class) for tools that walk the corpus.
"""
import argparse
import json
import os
import sys


def causal_lm_models(only=None):
    """[(model_type, causal-LM class name, package folder)] of the installed transformers."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES, model_type_to_module_name
    root = os.path.join(os.path.dirname(transformers.__file__), "models")
    found = []
    for model_type, arch in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items()):
        if only and model_type not in only:
            continue
        if model_type not in CONFIG_MAPPING_NAMES:
            continue
        folder = model_type_to_module_name(model_type)
        modeling = os.path.join(root, folder, f"modeling_{folder}.py")
        if isinstance(arch, (tuple, list)):
            arch = arch[0]
        if os.path.exists(modeling):
            found.append((model_type, arch, modeling))
    return found


def export(out, only=None):
    from transformers import CONFIG_MAPPING
    written, failed = [], []
    for model_type, arch, modeling in causal_lm_models(only):
        folder = os.path.join(out, model_type)
        try:
            config = CONFIG_MAPPING[model_type]()
            data = config.to_dict()
        except Exception as err:  # noqa: BLE001 -- a config class that cannot be made with its defaults
            failed.append((model_type, f"{type(err).__name__}: {err}"))
            continue
        data["architectures"] = [arch]
        data["model_type"] = model_type
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True, default=str)
            handle.write("\n")
        link = os.path.join(folder, os.path.basename(modeling))
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(modeling, link)
        written.append({"model_type": model_type, "causal_lm": arch, "config_class": type(config).__name__,
                        "modeling": modeling, "folder": folder})
        print(f"{model_type}: {arch} ({type(config).__name__})")
    for model_type, why in failed:
        print(f"{model_type}: not written: {why}", file=sys.stderr)
    print(f"{len(written)} model folders written under {out}; {len(failed)} config classes failed")
    return written, failed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="", help="comma list of model types (default: every causal LM)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    only = {m for m in args.models.split(",") if m} or None
    written, _ = export(args.out, only)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(written, handle, indent=2)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
