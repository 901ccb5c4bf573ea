"""Loading and numerically checking the fusion rules under rules/.

A rule file is data for the C++ tool (it reads the module docstring and the literal
`RULE = {...}` without importing) and code for the verifier (which imports it and runs
every `search*` function against `replace`). This package is the Python half: find the
rule files, import them, build inputs from `RULE["inputs"]`, compare results.
"""
from .loader import RuleModule, discover_rule_files, load_rule, rules_root
from .inputs import build_inputs, clone_inputs, check_dtype, resolve_size
from .compare import Comparison, compare_outputs, exact_outputs, in_replacement_layout, tolerance_for, upcast_inputs

__all__ = ["RuleModule", "discover_rule_files", "load_rule", "rules_root", "build_inputs",
           "clone_inputs", "check_dtype", "resolve_size", "Comparison", "compare_outputs", "in_replacement_layout",
           "tolerance_for", "exact_outputs", "upcast_inputs"]
