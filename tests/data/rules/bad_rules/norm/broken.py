"""A rule with several mistakes, for the loader's error messages.

What it does
    Nothing useful.
Why
    To be refused.
Example
    x
Use instead
    y
Fix safety
    None.
"""
RULE = {
    "id": "norm.fixed",
    "title": "broken",
    "module": "normalisation",
    "apis": "npu_rms_norm",
    "stages": ["prefill", "training"],
    "safety": "maybe",
    "prerequisites": [{"id": "p", "en": "do p"}],
    "checks": ["npu_rms_norm"],
    "facts": {"eps": some_name},
    "colour": "red",
    "inputs": {},
    "sizes": {},
    "doc_zh": "坏规则。\n\n功能\n    无。\n",
}


def search(x, w):
    return x * w


def replace(x):
    return x
